//! Who may read `/metrics` and `/guest` on the secure port: the caller's bearer token is
//! authenticated with a `TokenReview` and the user authorised with a `SubjectAccessReview` for
//! the non-resource URL (the request's path, verb `get`), both through the API server, as
//! controller-runtime's secure metrics serving (and kube-rbac-proxy) do.
//!
//! Answers are cached per token and path, a minute when allowed and ten seconds when refused,
//! so a scraper costs the API server two requests a minute rather than two a scrape. The
//! reviews go through a client of their own, so that a flood of bogus tokens spends that
//! client's rate limit, not the controller's.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use sha2::{Digest, Sha256};

/// How long an allowed caller is remembered.
const ALLOWED_TTL: Duration = Duration::from_secs(60);
/// How long a refused or unknown token is remembered.
const REFUSED_TTL: Duration = Duration::from_secs(10);
/// Most remembered answers; past it the cache starts afresh (bogus tokens cannot grow it).
const CACHE_ENTRIES: usize = 4096;

/// What the API server said about a token and path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    Allowed,
    /// The token is not valid: 401.
    Unauthenticated,
    /// The user may not get the path: 403, with the user named.
    Forbidden(String),
}

/// Authenticates and authorises callers through the API server.
pub struct Authorizer {
    client: kube::Client,
    cache: Mutex<HashMap<[u8; 32], (Instant, Verdict)>>,
}

impl Authorizer {
    /// An authorizer that sends its reviews through `client`.
    pub fn new(client: kube::Client) -> Self {
        Authorizer {
            client,
            cache: Mutex::new(HashMap::new()),
        }
    }

    async fn verdict(&self, token: &str, path: &str) -> Result<Verdict, kube::Error> {
        let key: [u8; 32] = Sha256::new()
            .chain_update(token.as_bytes())
            .chain_update([0])
            .chain_update(path.as_bytes())
            .finalize()
            .into();
        if let Some((at, verdict)) = self.lock().get(&key)
            && at.elapsed()
                < match verdict {
                    Verdict::Allowed => ALLOWED_TTL,
                    _ => REFUSED_TTL,
                }
        {
            return Ok(verdict.clone());
        }
        let verdict = self.review(token, path).await?;
        let mut cache = self.lock();
        if cache.len() >= CACHE_ENTRIES {
            cache.clear();
        }
        cache.insert(key, (Instant::now(), verdict.clone()));
        Ok(verdict)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], (Instant, Verdict)>> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn review(&self, token: &str, path: &str) -> Result<Verdict, kube::Error> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_string(),
                ..Default::default()
            },
            ..Default::default()
        };
        let reviewed = Api::<TokenReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await?;
        let status = reviewed.status.unwrap_or_default();
        let user = match (status.authenticated, status.user) {
            (Some(true), Some(user)) => user,
            _ => return Ok(Verdict::Unauthenticated),
        };
        let access = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username.clone(),
                uid: user.uid,
                groups: user.groups,
                extra: user.extra,
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(path.to_string()),
                    verb: Some("get".into()),
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let decided = Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &access)
            .await?;
        Ok(match decided.status {
            Some(status) if status.allowed => Verdict::Allowed,
            _ => Verdict::Forbidden(user.username.unwrap_or_default()),
        })
    }
}

/// The bearer token of a request, if it carries one.
fn bearer(request: &Request) -> Option<&str> {
    let value = request
        .headers()
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Middleware: passes the request on only for a caller the API server authenticates and
/// allows to `get` its path; otherwise 401 (no or invalid token), 403 (not allowed) or 503
/// (the API server could not be asked).
pub async fn require_access(
    State(authorizer): State<std::sync::Arc<Authorizer>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(token) = bearer(&request) else {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "Unauthorized: a bearer token is required\n",
        )
            .into_response();
    };
    let path = request.uri().path().to_string();
    match authorizer.verdict(token, &path).await {
        Ok(Verdict::Allowed) => next.run(request).await,
        Ok(Verdict::Unauthenticated) => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "Unauthorized: the API server does not accept this token\n",
        )
            .into_response(),
        Ok(Verdict::Forbidden(user)) => (
            StatusCode::FORBIDDEN,
            format!("Forbidden: user {user:?} may not get path {path:?}\n"),
        )
            .into_response(),
        Err(error) => {
            tracing::warn!(%error, "cannot review a metrics caller with the API server");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "cannot authenticate or authorise: the API server did not answer\n",
            )
                .into_response()
        }
    }
}
