//! Registry credentials in docker's config format: the `auths` of `~/.docker/config.json`
//! (or `$DOCKER_CONFIG/config.json`), and of a Kubernetes Secret of type
//! `kubernetes.io/dockerconfigjson` (key `.dockerconfigjson`) or `kubernetes.io/dockercfg`
//! (key `.dockercfg`, the `auths` map alone). The config file may also name credential
//! helpers (`credHelpers` per registry, `credsStore` for all), which
//! [`credential_helper`](super::credential_helper) runs; a Secret's helpers are ignored, since a
//! Secret must not choose which program weir runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine;
use serde::Deserialize;

/// A user name and password (or token) for one registry.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    /// The user name.
    pub username: String,
    /// The password or token.
    pub password: String,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// Credentials by registry host, and the credential helpers of the docker config file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Credentials {
    by_host: BTreeMap<String, Credential>,
    helpers: BTreeMap<String, String>,
    store: Option<String>,
}

/// Where the credential of one registry comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// A credential the config holds.
    Credential(Credential),
    /// The credential helper of this name has it (`docker-credential-NAME`), asked with
    /// `server`.
    Helper {
        /// The helper's name.
        name: String,
        /// The address to ask it for.
        server: String,
    },
    /// None: an anonymous request.
    Anonymous,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConfigFile {
    #[serde(default)]
    auths: BTreeMap<String, Entry>,
    #[serde(default)]
    cred_helpers: BTreeMap<String, String>,
    #[serde(default)]
    creds_store: Option<String>,
}

#[derive(Deserialize)]
struct Entry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default, rename = "identitytoken")]
    identity_token: Option<String>,
}

/// Why credentials cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    /// The file exists but cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The text is not docker's config format.
    #[error("{what}: not a docker config: {message}")]
    Format {
        /// What was read (a file or a Secret).
        what: String,
        /// Why.
        message: String,
    },
}

impl Credentials {
    /// Parses a docker `config.json` (an object with `auths`); `what` names it in errors.
    pub fn from_config_json(text: &[u8], what: &str) -> Result<Credentials, CredentialsError> {
        let file: ConfigFile =
            serde_json::from_slice(text).map_err(|e| CredentialsError::Format {
                what: what.to_string(),
                message: e.to_string(),
            })?;
        let mut credentials = Self::from_entries(file.auths, what)?;
        credentials.helpers = file
            .cred_helpers
            .into_iter()
            .map(|(key, helper)| (host_of(&key), helper))
            .collect();
        credentials.store = file.creds_store.filter(|s| !s.is_empty());
        Ok(credentials)
    }

    /// Parses the legacy `.dockercfg` form: the `auths` map alone.
    pub fn from_dockercfg(text: &[u8], what: &str) -> Result<Credentials, CredentialsError> {
        let auths: BTreeMap<String, Entry> =
            serde_json::from_slice(text).map_err(|e| CredentialsError::Format {
                what: what.to_string(),
                message: e.to_string(),
            })?;
        Self::from_entries(auths, what)
    }

    /// The docker config file of this user: `$DOCKER_CONFIG/config.json`, else
    /// `~/.docker/config.json`. None exists: no credentials (anonymous pulls).
    pub fn from_docker_config() -> Result<Credentials, CredentialsError> {
        let Some(path) = docker_config_path() else {
            return Ok(Credentials::default());
        };
        match std::fs::read(&path) {
            Ok(text) => Self::from_config_json(&text, &path.display().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Credentials::default()),
            Err(source) => Err(CredentialsError::Read { path, source }),
        }
    }

    /// The credentials of a docker-config Secret's data (either key type).
    pub fn from_secret_data(
        data: &BTreeMap<String, Vec<u8>>,
        what: &str,
    ) -> Result<Credentials, CredentialsError> {
        if let Some(text) = data.get(".dockerconfigjson") {
            let mut credentials = Self::from_config_json(text, what)?;
            credentials.helpers.clear();
            credentials.store = None;
            Ok(credentials)
        } else if let Some(text) = data.get(".dockercfg") {
            Self::from_dockercfg(text, what)
        } else {
            Err(CredentialsError::Format {
                what: what.to_string(),
                message: "no .dockerconfigjson or .dockercfg key".into(),
            })
        }
    }

    fn from_entries(
        auths: BTreeMap<String, Entry>,
        what: &str,
    ) -> Result<Credentials, CredentialsError> {
        let mut by_host = BTreeMap::new();
        for (key, entry) in auths {
            let credential = entry
                .credential()
                .map_err(|message| CredentialsError::Format {
                    what: what.to_string(),
                    message: format!("auths[{key:?}]: {message}"),
                })?;
            if let Some(credential) = credential {
                by_host.insert(host_of(&key), credential);
            }
        }
        Ok(Credentials {
            by_host,
            ..Credentials::default()
        })
    }

    /// Adds `other`'s entries and helpers, replacing this one's for the same host.
    pub fn merge(&mut self, other: Credentials) {
        self.by_host.extend(other.by_host);
        self.helpers.extend(other.helpers);
        if other.store.is_some() {
            self.store = other.store;
        }
    }

    /// Where `registry`'s credential comes from: a credential the config (or a Secret) holds,
    /// else the registry's `credHelpers` entry, else the `credsStore`, else none. (docker asks
    /// a registry's `credHelpers` entry first; with both, weir takes the stored credential, so
    /// that a `--registry-secret` wins over the local file.)
    pub fn lookup(&self, registry: &str) -> Lookup {
        let host = host_of(registry);
        if let Some(credential) = self.by_host.get(&host) {
            return Lookup::Credential(credential.clone());
        }
        let Some(name) = self.helpers.get(&host).or(self.store.as_ref()) else {
            return Lookup::Anonymous;
        };
        // Helpers key Docker Hub by its legacy index address, as docker asks them.
        let server = if host == "docker.io" {
            "https://index.docker.io/v1/".to_string()
        } else {
            host
        };
        Lookup::Helper {
            name: name.clone(),
            server,
        }
    }

    /// The credential for `registry` (a host, with its port if any).
    pub fn get(&self, registry: &str) -> Option<&Credential> {
        self.by_host.get(&host_of(registry))
    }

    /// Whether there are none: no credential and no helper.
    pub fn is_empty(&self) -> bool {
        self.by_host.is_empty() && self.helpers.is_empty() && self.store.is_none()
    }
}

impl Entry {
    fn credential(self) -> Result<Option<Credential>, String> {
        if let (Some(username), Some(password)) = (&self.username, &self.password) {
            return Ok(Some(Credential {
                username: username.clone(),
                password: password.clone(),
            }));
        }
        if let Some(auth) = self.auth.filter(|a| !a.is_empty()) {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(auth.trim())
                .map_err(|_| "auth is not base64".to_string())?;
            let decoded =
                String::from_utf8(decoded).map_err(|_| "auth is not UTF-8".to_string())?;
            let (username, password) = decoded
                .split_once(':')
                .ok_or("auth is not base64 of USER:PASSWORD")?;
            return Ok(Some(Credential {
                username: username.into(),
                password: password.into(),
            }));
        }
        // An identity token is an OAuth refresh token, which registries take with the
        // documented placeholder user name.
        Ok(self.identity_token.map(|token| Credential {
            username: "<token>".into(),
            password: token,
        }))
    }
}

/// Where docker keeps its config file, if a home directory is known.
fn docker_config_path() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("DOCKER_CONFIG").filter(|d| !d.is_empty()) {
        return Some(Path::new(&dir).join("config.json"));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|home| Path::new(&home).join(".docker").join("config.json"))
}

/// The host an `auths` key names: keys may be `https://HOST/v1/`, `HOST` or `http://HOST`;
/// Docker Hub's is `https://index.docker.io/v1/`, which references call `docker.io`.
fn host_of(key: &str) -> String {
    let rest = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let host = rest.split('/').next().unwrap_or(rest).to_ascii_lowercase();
    match host.as_str() {
        "index.docker.io" | "registry-1.docker.io" => "docker.io".into(),
        _ => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(text: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(text)
    }

    #[test]
    fn reads_every_entry_form() {
        let text = serde_json::json!({"auths": {
            "https://index.docker.io/v1/": {"auth": b64("hub:secret")},
            "127.0.0.1:5000": {"username": "u", "password": "p"},
            "https://ghcr.io/v2/": {"identitytoken": "tok"},
            "quay.io": {"auth": ""},
        }, "credsStore": "desktop"})
        .to_string();
        let creds = Credentials::from_config_json(text.as_bytes(), "config.json").unwrap();
        let get = |host| {
            creds
                .get(host)
                .map(|c| (c.username.as_str(), c.password.as_str()))
        };
        assert_eq!(get("docker.io"), Some(("hub", "secret")));
        assert_eq!(get("127.0.0.1:5000"), Some(("u", "p")));
        assert_eq!(get("GHCR.io"), Some(("<token>", "tok")));
        assert_eq!(get("quay.io"), None);
        assert!(!format!("{:?}", creds).contains("secret"));
    }

    #[test]
    fn helpers_answer_for_registries_without_a_stored_credential() {
        let text = serde_json::json!({
            "auths": {"127.0.0.1:5000": {"username": "u", "password": "p"}, "quay.io": {}},
            "credHelpers": {"https://ECR.example/": "ecr-login", "127.0.0.1:5000": "pass"},
            "credsStore": "desktop",
        })
        .to_string();
        let creds = Credentials::from_config_json(text.as_bytes(), "config.json").unwrap();
        let helper = |name: &str, server: &str| Lookup::Helper {
            name: name.into(),
            server: server.into(),
        };
        assert!(
            matches!(creds.lookup("127.0.0.1:5000"), Lookup::Credential(c) if c.username == "u")
        );
        assert_eq!(
            creds.lookup("ecr.example"),
            helper("ecr-login", "ecr.example")
        );
        assert_eq!(creds.lookup("quay.io"), helper("desktop", "quay.io"));
        assert_eq!(
            creds.lookup("docker.io"),
            helper("desktop", "https://index.docker.io/v1/")
        );
        let none = Credentials::from_config_json(br#"{"credsStore": ""}"#, "f").unwrap();
        assert_eq!(none.lookup("quay.io"), Lookup::Anonymous);
        assert!(none.is_empty());
    }

    #[test]
    fn a_secret_names_no_helper() {
        let json = serde_json::json!({"credHelpers": {"r.example": "evil"}, "credsStore": "evil"});
        let mut data = BTreeMap::new();
        data.insert(
            ".dockerconfigjson".to_string(),
            json.to_string().into_bytes(),
        );
        let creds = Credentials::from_secret_data(&data, "Secret ns/a").unwrap();
        assert_eq!(creds.lookup("r.example"), Lookup::Anonymous);
    }

    #[test]
    fn reads_secrets_of_both_types_and_merges() {
        let json = serde_json::json!({"auths": {"r.example": {"auth": b64("a:b")}}}).to_string();
        let cfg = serde_json::json!({"r.example": {"auth": b64("c:d")}}).to_string();
        let mut data = BTreeMap::new();
        data.insert(".dockerconfigjson".to_string(), json.into_bytes());
        let mut first = Credentials::from_secret_data(&data, "Secret ns/a").unwrap();
        assert_eq!(first.get("r.example").unwrap().username, "a");
        let mut data = BTreeMap::new();
        data.insert(".dockercfg".to_string(), cfg.into_bytes());
        let second = Credentials::from_secret_data(&data, "Secret ns/b").unwrap();
        first.merge(second);
        assert_eq!(first.get("r.example").unwrap().username, "c");
        let err = Credentials::from_secret_data(&BTreeMap::new(), "Secret ns/c").unwrap_err();
        assert!(
            err.to_string()
                .contains("Secret ns/c: not a docker config: no .dockerconfigjson")
        );
    }

    #[test]
    fn refuses_malformed_entries() {
        for (text, expect) in [
            (r#"{"auths": {"h": {"auth": "!!"}}}"#, "auth is not base64"),
            (
                &*format!(r#"{{"auths": {{"h": {{"auth": "{}"}}}}}}"#, b64("nocolon")),
                "USER:PASSWORD",
            ),
            (r#""auths""#, "not a docker config"),
        ] {
            let err = Credentials::from_config_json(text.as_bytes(), "f").unwrap_err();
            assert!(err.to_string().contains(expect), "{text}: {err}");
        }
    }
}
