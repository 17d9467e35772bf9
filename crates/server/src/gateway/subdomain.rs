//! Content as its own origin: a subdomain gateway, as Kubo has. A request whose host is
//! `{cid}.ipfs.{domain}` is served as `/ipfs/{cid}/...`, so one user's website cannot read
//! another's storage or cookies (browsers isolate origins); a browser reading
//! `/ipfs/{cid}/...` from the path gateway is redirected there, as is any client asking the
//! gateway domain itself (`localhost:8080/ipfs/...`, as Kubo does). `localhost` is the default
//! domain: browsers resolve `*.localhost` to the loopback address themselves.

use std::convert::Infallible;

use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use cairn_p2p::ipns::Name;
use cairn_unixfs::Cid;
use tower::{service_fn, ServiceExt};

use crate::error::ApiError;
use crate::origin::RequestOrigin;
use crate::state::{AppState, ServerConfig};

/// A DNS label holds at most this many characters.
const MAX_LABEL: usize = 63;

/// Marks a request that came to a content origin, with the URI the browser asked for (the
/// routes see it as `/ipfs/{cid}/...`).
#[derive(Clone)]
pub struct ContentOrigin {
    pub uri: Uri,
}

/// The upload host's routes, with a request to a content origin turned into the gateway
/// request it stands for, whatever its path: nothing but the content is served there.
pub fn with_content_origins(routes: Router, state: &AppState) -> Router {
    let Some(domain) = state.config.gateway_domain.clone() else {
        return routes;
    };
    let config = state.config.clone();
    let domain = domain.to_ascii_lowercase();
    Router::new().fallback_service(service_fn(move |mut request: Request| {
        let routes = routes.clone();
        let rewritten = to_gateway_request(&config, &domain, &mut request);
        async move {
            match rewritten {
                Ok(None) => routes.oneshot(request).await,
                Ok(Some(answer)) => Ok::<_, Infallible>(answer),
                Err(e) => Ok(e.into_response()),
            }
        }
    }))
}

/// Rewrite `request` to `/ipfs/{cid}{path}` when its host is a content origin
/// (`{cid}.ipfs.{domain}`), or to `/ipns/{name}{path}` when it is a name's; or answer it at
/// once (`Some`): a name's origin written with another codec than libp2p-key
/// (`{dag-pb CID}.ipns.{domain}`) is redirected to its canonical one.
pub fn to_gateway_request(
    config: &ServerConfig,
    domain: &str,
    request: &mut Request,
) -> Result<Option<Response>, ApiError> {
    let Ok(origin) = RequestOrigin::of(config, request.headers()) else {
        // Not a host name at all: not a content origin; the routes judge the request.
        return Ok(None);
    };
    let hostname = origin.hostname();
    let Some((label, namespace)) = origin_label(&hostname, domain) else {
        return Ok(None);
    };
    if label.len() > MAX_LABEL {
        return Err(too_long_for_a_label(label));
    }
    if label.is_empty() || label.contains('.') {
        return Err(ApiError::BadRequest(format!(
            "{hostname:?}: a content origin is one CID or name followed by \".{namespace}.{domain}\""
        )));
    }
    let label = if namespace == "ipfs" {
        let cid: Cid = label.parse().map_err(|e| {
            ApiError::BadRequest(format!("{label:?} in the host is not a CID: {e}"))
        })?;
        cid.to_string()
    } else {
        let name = match label.parse::<Name>() {
            Ok(name) => name,
            Err(why) => {
                let Some(name) = key_in_another_codec(label) else {
                    return Err(ApiError::BadRequest(why));
                };
                // The subdomain spec's "CIDv1 with libp2p-key multicodec", by Kubo's `301`.
                let (canonical, uri) = (name.to_string(), request.uri());
                let to = (canonical.as_str(), "ipns");
                return moved_to(&origin, to, domain, uri.path(), uri.query()).map(Some);
            }
        };
        name.to_string()
    };
    let original = request.uri().clone();
    let path_and_query = original.path_and_query().map_or("/", |p| p.as_str());
    let rewritten: Uri = format!("/{namespace}/{label}{path_and_query}")
        .parse()
        .map_err(|_| ApiError::BadRequest("the request's path is not a URI path".into()))?;
    *request.uri_mut() = rewritten;
    request
        .extensions_mut()
        .insert(ContentOrigin { uri: original });
    Ok(None)
}

/// The name whose key hash `label` holds under another codec (a dag-pb CIDv1 of it, say).
fn key_in_another_codec(label: &str) -> Option<Name> {
    let cid = Cid::try_from(label).ok()?;
    let as_key = Cid::new_v1(0x72, *cid.hash());
    as_key.to_string().parse().ok()
}

/// What a content origin serves: one CID's content, or one IPNS name's.
pub enum Origin<'a> {
    Content(&'a Cid),
    Name(&'a str),
}

/// `301` from `/ipfs/{cid}/rest?query` to `{scheme}://{label}.ipfs.{domain}{:port}/rest?query`,
/// and from `/ipns/{name}/...` to `{name}.ipns.{domain}`.
pub fn redirect(
    config: &ServerConfig,
    domain: &str,
    headers: &HeaderMap,
    to: Origin<'_>,
    uri: &Uri,
) -> Result<Response, ApiError> {
    let origin = RequestOrigin::of(config, headers)?;
    let (label, namespace) = match to {
        Origin::Content(root) => (dns_label(root)?, "ipfs"),
        Origin::Name(name) => (name.to_owned(), "ipns"),
    };
    let rest = super::after_root(uri.path(), namespace).unwrap_or("/");
    moved_to(&origin, (&label, namespace), domain, rest, uri.query())
}

/// `301` to `{scheme}://{label}.{namespace}.{domain}{:port}{path}?{query}`, the request's
/// scheme and port kept.
fn moved_to(
    origin: &RequestOrigin,
    (label, namespace): (&str, &str),
    domain: &str,
    path: &str,
    query: Option<&str>,
) -> Result<Response, ApiError> {
    let query = query.map(|q| format!("?{q}")).unwrap_or_default();
    let location = format!(
        "{}://{label}.{namespace}.{domain}{}{}{}",
        origin.scheme,
        origin.port_suffix(),
        ascii(path),
        ascii(&query)
    );
    let location = HeaderValue::from_str(&location)
        .map_err(|_| ApiError::BadRequest("the request's path is not a URI path".into()))?;
    Ok((
        StatusCode::MOVED_PERMANENTLY,
        [(header::LOCATION, location)],
    )
        .into_response())
}

/// The label and namespace of `hostname` when it is a content origin of `domain`
/// (`{label}.ipfs.{domain}`, `{label}.ipns.{domain}`); the label may still be malformed.
fn origin_label<'a>(hostname: &'a str, domain: &str) -> Option<(&'a str, &'static str)> {
    ["ipfs", "ipns"].into_iter().find_map(|namespace| {
        let label = hostname.strip_suffix(&format!(".{namespace}.{domain}"))?;
        Some((label, namespace))
    })
}

/// Whether the request's host is a content origin of the gateway domain.
pub fn is_content_origin(config: &ServerConfig, headers: &HeaderMap) -> bool {
    let (Some(domain), Ok(origin)) = (&config.gateway_domain, RequestOrigin::of(config, headers))
    else {
        return false;
    };
    origin_label(&origin.hostname(), &domain.to_ascii_lowercase()).is_some()
}

/// `text` with every non-ASCII byte percent-encoded: a request's path may carry raw UTF-8
/// (curl sends it as typed, and hyper takes it), but a `Location` is a URI, ASCII only.
fn ascii(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii() {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The CID as one DNS label: CIDv1 (a CIDv0 converted) in base32. Longer than a label
/// holds, it has no origin (the subdomain spec, "DNS label limits": `400`); base36 is for
/// libp2p keys, names (`Name`'s own form).
pub fn dns_label(cid: &Cid) -> Result<String, ApiError> {
    let v1 = Cid::new_v1(cid.codec(), *cid.hash());
    let base32 = v1.to_string();
    if base32.len() <= MAX_LABEL {
        return Ok(base32);
    }
    Err(too_long_for_a_label(&base32))
}

fn too_long_for_a_label(label: &str) -> ApiError {
    ApiError::BadRequest(format!(
        "CID incompatible with DNS label length limit of {MAX_LABEL}: {label} is {} \
         characters long, so it cannot have an origin of its own; read it from the path \
         gateway with ?format=raw or ?format=car",
        label.len()
    ))
}

/// A browser opening a page (`Sec-Fetch-Mode: navigate`, which every browser sends when it
/// navigates), rather than a program fetching bytes, or HTML: curl, `cairn get`, trustless
/// clients and a program asking for `text/html` stay on the path gateway.
pub fn is_browser_navigation(headers: &HeaderMap) -> bool {
    headers
        .get("sec-fetch-mode")
        .is_some_and(|mode| mode == "navigate")
}

/// Whether a path gateway request for plain content goes to its content origin: a browser's
/// navigation always (a website works whole only on its own origin; the path gateway
/// sandboxes it), and any client's sent to the gateway domain itself, which the subdomain spec
/// says MUST redirect ("Migrating from Path to Subdomain Gateway").
pub fn redirects(config: &ServerConfig, domain: &str, headers: &HeaderMap) -> bool {
    is_browser_navigation(headers)
        || RequestOrigin::of(config, headers)
            .is_ok_and(|origin| origin.hostname() == domain.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidv0_becomes_its_cidv1_in_base32() {
        let v0: Cid = "QmUNLLsPACCz1vLxQVkXqqLX5R1X345qqfHbsf67hvA3Nn"
            .parse()
            .unwrap();
        assert_eq!(
            dns_label(&v0).unwrap(),
            "bafybeiczsscdsbs7ffqz55asqdf3smv6klcw3gofszvwlyarci47bgf354"
        );
    }

    #[test]
    fn a_cid_longer_than_a_dns_label_has_no_origin() {
        // A 35-byte digest (39 bytes of CID) fits in base36 but not in base32: the subdomain
        // spec keeps base36 for names ("DNS label limits"), so it is refused, saying why.
        let medium = Cid::new_v1(
            0x55,
            cid::multihash::Multihash::wrap(0x13, &[7u8; 35]).unwrap(),
        );
        let refused = dns_label(&medium).unwrap_err().to_string();
        assert!(refused.contains("DNS label"), "{refused}");
    }
}
