//! The upload host served in the bench's own process on a free loopback port, shared by the
//! server's benches.

use std::path::Path;
use std::sync::Arc;

use cairn_server::{upload_app, AppState, ServerConfig};
use cairn_service::{Service, ServiceConfig};
use cairn_store::packs::Packs;
use cairn_store::staging::Staging;
use cairn_store::tus_bytes::FileTusBytes;
use cairn_store::MetadataStore;

/// The state of a server whose staging and TUS files live under `dir`.
pub fn state_in(
    dir: &Path,
    store: Arc<dyn MetadataStore>,
    packs: Packs,
    service_config: ServiceConfig,
    config: ServerConfig,
) -> AppState {
    let service = Service::new(
        store,
        packs,
        Staging::open(dir.join("staging")).unwrap(),
        Arc::new(FileTusBytes::open(dir.join("tus")).unwrap()),
        service_config,
    );
    AppState::new(service, config)
}

/// Serve `state`'s upload host until the process ends; its base URL.
pub async fn serve_upload_host(state: AppState) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let header_timeout = state.config.header_timeout;
    tokio::spawn(cairn_server::listen::serve(
        listener,
        upload_app(state),
        header_timeout,
        None,
        std::future::pending(),
    ));
    url
}
