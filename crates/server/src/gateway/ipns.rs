//! `GET /ipns/{name}[/{path}]` (HEAD too), and `{name}.ipns.{domain}`: the name resolved to
//! the content path its newest valid record holds, then served as `/ipfs/` is, cached for the
//! record's TTL rather than forever. `?format=ipns-record` or `Accept:
//! application/vnd.ipfs.ipns-record` answers the signed record itself (trustless gateway spec),
//! for a client that verifies it.

use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use cairn_p2p::ipns::Name;
use cairn_service::names as service_names;

use super::{serve, Asked};
use crate::error::ApiError;
use crate::routes::names::{record_response, IPNS_RECORD};
use crate::state::AppState;

pub async fn get(
    State(state): State<AppState>,
    Path(params): Path<Vec<(String, String)>>,
    asked: Asked,
) -> Result<Response, ApiError> {
    let (query, headers) = (&asked.query, &asked.headers);
    let param = |key: &str| {
        params
            .iter()
            .find(|(k, _)| k == key)
            .map_or("", |(_, v)| v.as_str())
    };
    let text = param("name");
    let name: Name = text.parse().map_err(|_| {
        ApiError::BadRequest(format!(
            "{text:?} is not an IPNS name (a CID with the libp2p-key codec, or a peer ID); \
             DNSLink names are not resolved here"
        ))
    })?;
    let wants_record = query.format.as_deref() == Some("ipns-record")
        || super::accept(headers).contains(IPNS_RECORD);
    let on_path_gateway = asked.content_origin.is_none();
    if on_path_gateway && !wants_record {
        if let Some(redirect) = canonical_redirect(&state, &asked, text, &name)? {
            return Ok(redirect);
        }
    }
    // A record is the name's, not a path's (path gateway spec, `application/vnd.ipfs.ipns-record`).
    if wants_record && !param("path").is_empty() {
        return Err(ApiError::BadRequest(format!(
            "an IPNS record is asked for by its name alone: /ipns/{name}?format=ipns-record"
        )));
    }
    let resolved = service_names::resolve(&state.service, &name)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no valid record of {name} is known")))?;
    if wants_record {
        let mut response = record_response(&name, &resolved);
        // The download's name, when asked (path gateway spec, `filename`: "gateway will
        // include it in `Content-Disposition`"), non-ASCII as the spec's header section says.
        if let Some(filename) = &query.filename {
            response.headers_mut().insert(
                header::CONTENT_DISPOSITION,
                super::content_disposition("attachment", filename),
            );
        }
        return Ok(response);
    }
    let record = &resolved.record;
    let (cid, inner) = record.target().ok_or_else(|| {
        ApiError::BadGateway(format!(
            "{name} points at {:?}: only /ipfs/ paths are followed",
            record.value
        ))
    })?;
    let path = [inner, param("path")]
        .into_iter()
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("/");
    let params = [
        ("cid".to_owned(), cid.to_string()),
        ("path".to_owned(), path),
    ];
    let name_text = name.to_string();
    serve(&state, asked, &params, Some((&name_text, record.ttl))).await
}

/// Before the name is resolved (what the name is says where it goes): a browser, or a client
/// of the gateway domain itself, goes to the name's origin (`301`, as for `/ipfs/`); any other
/// request naming it in another form than its canonical one (a peer ID, `12D3Koo...` or
/// `Qm...`) goes to `/ipns/{k51...}/rest` (`302`, as Kubo does: the subdomain spec's
/// canonical form, "CIDv1 with libp2p-key multicodec ... Base36").
fn canonical_redirect(
    state: &AppState,
    asked: &Asked,
    text: &str,
    name: &Name,
) -> Result<Option<Response>, ApiError> {
    let canonical = name.to_string();
    let format = super::negotiate(&asked.query, &asked.headers)?;
    if let Some(domain) = &state.config.gateway_domain {
        if format == super::Format::Plain
            && super::subdomain::redirects(&state.config, domain, &asked.headers)
        {
            let to = super::subdomain::Origin::Name(&canonical);
            return super::subdomain::redirect(
                &state.config,
                domain,
                &asked.headers,
                to,
                &asked.uri,
            )
            .map(Some);
        }
    }
    if text == canonical {
        return Ok(None);
    }
    let rest = super::after_root(asked.uri.path(), "ipns").unwrap_or("");
    let query = asked
        .uri
        .query()
        .map(|q| format!("?{q}"))
        .unwrap_or_default();
    let location = HeaderValue::from_str(&format!("/ipns/{canonical}{rest}{query}"))
        .map_err(|_| ApiError::BadRequest("the request's path is not a URI path".into()))?;
    Ok(Some(
        (StatusCode::FOUND, [(header::LOCATION, location)]).into_response(),
    ))
}
