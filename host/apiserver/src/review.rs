//! `TokenReview` (authentication.k8s.io/v1) and `SubjectAccessReview` (authorization.k8s.io/v1),
//! enough for a client that delegates authentication and authorisation to the API server, as
//! weir's secure metrics endpoint and controller-runtime's do.
//!
//! weir-apiserver itself serves every request without authentication. These two reviews answer
//! from two files in kube-apiserver's own formats (docs/apiserver.md):
//!
//! - `--token-auth-file`: static bearer tokens, one `token,user,uid,"group1,group2"` line each,
//!   as kube-apiserver's flag of that name. An authenticated user also gets the group
//!   `system:authenticated`, as kube-apiserver adds it. Without the file no token is valid.
//! - `--authorization-policy-file`: ABAC policies, one JSON object a line, as kube-apiserver's
//!   `--authorization-policy-file` with `--authorization-mode=ABAC`. Without the file every
//!   review is allowed, as `--authorization-mode=AlwaysAllow` (how weir-apiserver serves its own
//!   API).

use serde::Deserialize;
use serde_json::{Value, json};

use crate::util::ApiError;

/// A user a static token stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenUser {
    /// The bearer token.
    pub token: String,
    /// The user name.
    pub name: String,
    /// The user's uid.
    pub uid: String,
    /// The groups the user is in (without `system:authenticated`, added on review).
    pub groups: Vec<String>,
}

/// One ABAC policy line (`abac.authorization.kubernetes.io/v1beta1`, kind `Policy`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AbacPolicy {
    /// `abac.authorization.kubernetes.io/v1beta1`.
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    /// `Policy`.
    pub kind: String,
    /// Whom and what it allows.
    pub spec: AbacSpec,
}

/// What an ABAC policy allows; `"*"` matches anything.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct AbacSpec {
    /// A user name, or `*`.
    pub user: String,
    /// A group, or `*`.
    pub group: String,
    /// Only `get`, `list` and `watch`.
    pub readonly: bool,
    /// For resource requests: the API group, or `*`.
    pub api_group: String,
    /// For resource requests: the resource, or `*`.
    pub resource: String,
    /// For resource requests: the namespace, or `*`.
    pub namespace: String,
    /// For other requests: the path, `*`, or a prefix ending in `*`.
    pub non_resource_path: String,
}

/// Why a token or policy file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ReviewFileError {
    /// A token line has fewer than three columns or an empty token.
    #[error("line {line}: want token,user,uid[,\"group1,group2\"]")]
    Token {
        /// 1-based line number.
        line: usize,
    },
    /// A policy line is not an ABAC policy.
    #[error("line {line}: not an abac.authorization.kubernetes.io/v1beta1 Policy: {message}")]
    Policy {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
}

/// Parses a token file (kube-apiserver's `--token-auth-file` format). Blank lines and lines
/// starting with `#` are skipped.
///
/// Parsed by hand rather than with a CSV crate: the format has four columns and only the last
/// is ever quoted.
pub fn parse_token_file(text: &str) -> Result<Vec<TokenUser>, ReviewFileError> {
    let mut users = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut columns = line.splitn(4, ',');
        let mut next = || columns.next().map(str::trim).unwrap_or_default();
        let (token, name, uid) = (next(), next(), next());
        let groups = next();
        if token.is_empty() || name.is_empty() || uid.is_empty() {
            return Err(ReviewFileError::Token { line: i + 1 });
        }
        let groups = groups.trim_matches('"');
        users.push(TokenUser {
            token: token.into(),
            name: name.into(),
            uid: uid.into(),
            groups: groups
                .split(',')
                .map(str::trim)
                .filter(|g| !g.is_empty())
                .map(String::from)
                .collect(),
        });
    }
    Ok(users)
}

/// Parses an ABAC policy file: one JSON policy a line; blank lines and `#` lines skipped.
pub fn parse_policy_file(text: &str) -> Result<Vec<AbacPolicy>, ReviewFileError> {
    let mut policies = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let invalid = |message: String| ReviewFileError::Policy {
            line: i + 1,
            message,
        };
        let policy: AbacPolicy = serde_json::from_str(line).map_err(|e| invalid(e.to_string()))?;
        if policy.api_version != "abac.authorization.kubernetes.io/v1beta1"
            || policy.kind != "Policy"
        {
            return Err(invalid(format!(
                "apiVersion {:?} kind {:?}",
                policy.api_version, policy.kind
            )));
        }
        policies.push(policy);
    }
    Ok(policies)
}

/// The identities and policies the reviews answer from.
#[derive(Debug, Clone, Default)]
pub struct Reviews {
    /// Valid bearer tokens.
    pub tokens: Vec<TokenUser>,
    /// ABAC policies; `None` allows everything.
    pub policies: Option<Vec<AbacPolicy>>,
}

/// The two review endpoints (`create` only, as on kube-apiserver).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// `POST /apis/authentication.k8s.io/v1/tokenreviews`.
    TokenReview,
    /// `POST /apis/authorization.k8s.io/v1/subjectaccessreviews`.
    SubjectAccessReview,
}

impl Endpoint {
    /// The review a request creates, if it is one.
    pub(crate) fn of(method: &axum::http::Method, path: &str) -> Option<Self> {
        if method != axum::http::Method::POST {
            return None;
        }
        match path.trim_end_matches('/') {
            "/apis/authentication.k8s.io/v1/tokenreviews" => Some(Endpoint::TokenReview),
            "/apis/authorization.k8s.io/v1/subjectaccessreviews" => {
                Some(Endpoint::SubjectAccessReview)
            }
            _ => None,
        }
    }
}

/// What a SubjectAccessReview asks about.
struct Access<'a> {
    user: &'a str,
    groups: Vec<&'a str>,
    verb: &'a str,
    /// `(apiGroup, resource, namespace)` for a resource request.
    resource: Option<(&'a str, &'a str, &'a str)>,
    path: &'a str,
}

fn matches(pattern: &str, value: &str) -> bool {
    pattern == "*" || pattern == value
}

impl AbacSpec {
    fn allows(&self, a: &Access<'_>) -> bool {
        let subject = self.user == "*"
            || (!self.user.is_empty() && self.user == a.user)
            || self.group == "*"
            || (!self.group.is_empty() && a.groups.contains(&self.group.as_str()));
        let verb = !self.readonly || matches!(a.verb, "get" | "list" | "watch");
        let target = match a.resource {
            Some((group, resource, namespace)) => {
                matches(&self.api_group, group)
                    && matches(&self.resource, resource)
                    && matches(&self.namespace, namespace)
            }
            None => {
                let p = self.non_resource_path.as_str();
                matches(p, a.path)
                    || p.strip_suffix('*')
                        .is_some_and(|prefix| !prefix.is_empty() && a.path.starts_with(prefix))
            }
        };
        subject && verb && target
    }
}

impl Reviews {
    /// Answers a review created at `endpoint`.
    pub(crate) fn answer(&self, endpoint: Endpoint, review: &Value) -> Result<Value, ApiError> {
        match endpoint {
            Endpoint::TokenReview => self.token_review(review),
            Endpoint::SubjectAccessReview => self.subject_access_review(review),
        }
    }

    /// Answers a `TokenReview`: the review with its `status` filled in.
    pub(crate) fn token_review(&self, review: &Value) -> Result<Value, ApiError> {
        check_kind(review, "authentication.k8s.io/v1", "TokenReview")?;
        let token = review["spec"]["token"].as_str().unwrap_or_default();
        if token.is_empty() {
            return Err(invalid("TokenReview", "spec.token: Required value"));
        }
        let status = match self.tokens.iter().find(|u| u.token == token) {
            Some(user) => {
                let mut groups = user.groups.clone();
                groups.push("system:authenticated".into());
                json!({
                    "authenticated": true,
                    "user": {"username": user.name, "uid": user.uid, "groups": groups},
                })
            }
            None => json!({"authenticated": false, "error": "invalid bearer token"}),
        };
        Ok(answer(review, status))
    }

    /// Answers a `SubjectAccessReview`: the review with its `status` filled in.
    pub(crate) fn subject_access_review(&self, review: &Value) -> Result<Value, ApiError> {
        check_kind(review, "authorization.k8s.io/v1", "SubjectAccessReview")?;
        let spec = &review["spec"];
        let user = spec["user"].as_str().unwrap_or_default();
        let groups: Vec<&str> = spec["groups"]
            .as_array()
            .map(|g| g.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if user.is_empty() && groups.is_empty() {
            return Err(invalid(
                "SubjectAccessReview",
                "spec.user: Invalid value: \"\": at least one of user or group must be specified",
            ));
        }
        let (resource, non_resource) =
            (&spec["resourceAttributes"], &spec["nonResourceAttributes"]);
        let access = match (resource.is_object(), non_resource.is_object()) {
            (true, false) => Access {
                user,
                groups,
                verb: resource["verb"].as_str().unwrap_or_default(),
                resource: Some((
                    resource["group"].as_str().unwrap_or_default(),
                    resource["resource"].as_str().unwrap_or_default(),
                    resource["namespace"].as_str().unwrap_or_default(),
                )),
                path: "",
            },
            (false, true) => Access {
                user,
                groups,
                verb: non_resource["verb"].as_str().unwrap_or_default(),
                resource: None,
                path: non_resource["path"].as_str().unwrap_or_default(),
            },
            _ => {
                return Err(invalid(
                    "SubjectAccessReview",
                    "spec: exactly one of resourceAttributes or nonResourceAttributes must be specified",
                ));
            }
        };
        let status = match &self.policies {
            None => {
                json!({"allowed": true, "reason": "weir-apiserver allows everything without --authorization-policy-file"})
            }
            Some(policies) => match policies.iter().position(|p| p.spec.allows(&access)) {
                Some(i) => {
                    json!({"allowed": true, "reason": format!("allowed by policy line {}", i + 1)})
                }
                None => json!({"allowed": false, "reason": "no policy matched"}),
            },
        };
        Ok(answer(review, status))
    }
}

fn check_kind(review: &Value, api_version: &str, kind: &str) -> Result<(), ApiError> {
    if review["apiVersion"] != api_version || review["kind"] != kind {
        return Err(ApiError::new(
            400,
            "BadRequest",
            format!("the body must be a {api_version} {kind}"),
        ));
    }
    Ok(())
}

fn invalid(kind: &str, message: &str) -> ApiError {
    ApiError::new(422, "Invalid", format!("{kind} is invalid: {message}"))
}

/// The review as kube-apiserver returns it: as sent, with `status` and empty metadata.
fn answer(review: &Value, status: Value) -> Value {
    let mut out = review.clone();
    out["metadata"] = json!({"creationTimestamp": null});
    out["status"] = status;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reviews() -> Reviews {
        Reviews {
            tokens: parse_token_file(
                "# comment\nreader-token,prometheus,1,\"monitoring,viewers\"\nplain,nobody,2\n",
            )
            .unwrap(),
            policies: Some(
                parse_policy_file(concat!(
                    r#"{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"monitoring","nonResourcePath":"/metrics","readonly":true}}"#,
                    "\n",
                    r#"{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"admin","nonResourcePath":"/debug/*"}}"#,
                    "\n",
                    r#"{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"nobody","namespace":"default","resource":"pods","apiGroup":"","readonly":true}}"#,
                ))
                .unwrap(),
            ),
        }
    }

    fn token(token: &str) -> Value {
        reviews()
            .token_review(&json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}))
            .unwrap()["status"]
            .clone()
    }

    fn sar(user: &str, groups: &[&str], attributes: Value) -> bool {
        let mut spec = json!({"user": user, "groups": groups});
        for (k, v) in attributes.as_object().unwrap() {
            spec[k] = v.clone();
        }
        reviews()
            .subject_access_review(&json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}))
            .unwrap()["status"]["allowed"]
            .as_bool()
            .unwrap()
    }

    #[test]
    fn tokens_name_their_users() {
        let status = token("reader-token");
        assert_eq!(status["authenticated"], true);
        assert_eq!(status["user"]["username"], "prometheus");
        assert_eq!(
            status["user"]["groups"],
            json!(["monitoring", "viewers", "system:authenticated"])
        );
        assert_eq!(
            token("plain")["user"]["groups"],
            json!(["system:authenticated"])
        );
        assert_eq!(token("guess")["authenticated"], false);
    }

    #[test]
    fn abac_policies_decide() {
        let path =
            |p: &str, verb: &str| json!({"nonResourceAttributes": {"path": p, "verb": verb}});
        assert!(sar("prometheus", &["monitoring"], path("/metrics", "get")));
        assert!(!sar(
            "prometheus",
            &["monitoring"],
            path("/metrics", "post")
        ));
        assert!(!sar("prometheus", &["monitoring"], path("/guest", "get")));
        assert!(!sar("nobody", &[], path("/metrics", "get")));
        assert!(sar("admin", &[], path("/debug/pprof", "post")));
        assert!(!sar("admin", &[], path("/debugger", "get")));
        let pods = |ns: &str, verb: &str| json!({"resourceAttributes": {"namespace": ns, "verb": verb, "group": "", "resource": "pods"}});
        assert!(sar("nobody", &[], pods("default", "list")));
        assert!(!sar("nobody", &[], pods("default", "delete")));
        assert!(!sar("nobody", &[], pods("kube-system", "list")));
    }

    #[test]
    fn malformed_input_is_refused() {
        assert!(parse_token_file("only,two").is_err());
        assert!(parse_policy_file(r#"{"apiVersion":"v1","kind":"Policy","spec":{}}"#).is_err());
        assert!(parse_policy_file(r#"{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"users":"x"}}"#).is_err());
        let r = reviews();
        let e = r
            .subject_access_review(&json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {"user": "x"}}))
            .unwrap_err();
        assert_eq!(e.code, 422);
        let e = r
            .token_review(&json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {}}))
            .unwrap_err();
        assert_eq!(e.code, 422);
    }
}
