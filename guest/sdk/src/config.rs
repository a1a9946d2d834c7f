//! Policy configuration: the `config` string of a request, parsed into the policy's own type.
//!
//! The host hands the guest the text of `--policy-config` (or a case's `config`) converted to
//! JSON, whether the operator wrote JSON or YAML. An empty string means "no configuration".

use serde::de::DeserializeOwned;

/// A configuration that does not fit the policy's type.
#[derive(Debug)]
pub struct ConfigError(String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid policy configuration: {}", self.0)
    }
}

impl std::error::Error for ConfigError {}

impl From<ConfigError> for String {
    fn from(e: ConfigError) -> String {
        e.to_string()
    }
}

/// Parses the request's `config` into `T`. An empty config yields `T::default()`, so a policy
/// runs with its documented defaults when the operator gives none.
pub fn parse_config<T: DeserializeOwned + Default>(config: &str) -> Result<T, ConfigError> {
    if config.trim().is_empty() {
        return Ok(T::default());
    }
    serde_json::from_str(config).map_err(|e| ConfigError(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Default, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Sample {
        share: f64,
    }

    #[test]
    fn empty_gives_default() {
        assert_eq!(parse_config::<Sample>("").unwrap(), Sample::default());
    }

    #[test]
    fn errors_name_the_problem() {
        let err = parse_config::<Sample>(r#"{"shares": 1}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown field `shares`"), "{err}");
    }
}
