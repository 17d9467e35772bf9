//! The S3 backends' suites against two independent S3-compatible servers: moto and SeaweedFS
//! (`cairn_test_support::{moto, seaweedfs}`).

use cairn_store::blobs::{suite, BlobStore};
use cairn_store::s3::{S3Blobs, S3TusBytes};
use cairn_store::tus_bytes::{self, TusBytes};
use cairn_test_support::moto::Moto;
use cairn_test_support::seaweedfs::SeaweedFs;

#[test]
fn s3_blobs_pass_the_blob_store_suite() {
    let moto = Moto::start();
    let url = moto.bucket("suite");
    let blobs = S3Blobs::open(&url, "packs").unwrap();
    suite::run(&blobs);
    // Stores sharing a bucket under different names do not see each other's blobs.
    let staging = S3Blobs::open(&url, "staging").unwrap();
    let mut writer = staging.create("x").unwrap();
    std::io::Write::write_all(&mut writer, b"staged").unwrap();
    writer.commit().unwrap();
    assert!(blobs.list(std::time::Duration::ZERO).unwrap().is_empty());
}

#[test]
fn s3_tus_bytes_pass_the_tus_bytes_suite() {
    let moto = Moto::start();
    let bytes = S3TusBytes::open(&moto.bucket("tus")).unwrap();
    // Above the 8 MiB part size: the suite's big upload spans parts and a tail.
    tus_bytes::suite::run(&bytes, 9 << 20);
}

#[test]
fn s3_backends_pass_their_suites_on_seaweedfs_too() {
    let seaweedfs = SeaweedFs::start(&["suite"]);
    let url = seaweedfs.bucket("suite");
    suite::run(&S3Blobs::open(&url, "packs").unwrap());
    tus_bytes::suite::run(&S3TusBytes::open(&url).unwrap(), 9 << 20);
}

#[test]
fn a_tus_writer_that_lost_the_upload_to_another_cannot_overwrite_its_commit() {
    let moto = Moto::start();
    let bytes = S3TusBytes::open(&moto.bucket("fence")).unwrap();
    bytes.create("u").unwrap();
    // A node starts a PATCH, is paused past its lease, and another node takes over.
    let mut paused = bytes.appender("u", false).unwrap();
    paused.append(b"stale").unwrap();
    let mut newer = bytes.appender("u", false).unwrap();
    newer.append(b"fresh").unwrap();
    assert_eq!(newer.keep().unwrap(), 5);
    let refused = paused.keep().unwrap_err();
    assert_eq!(
        refused.kind(),
        std::io::ErrorKind::ResourceBusy,
        "{refused}"
    );
    assert_eq!(bytes.offset("u").unwrap(), 5);
    let mut all = Vec::new();
    let mut done = bytes.appender("u", false).unwrap();
    done.append(b"12345").unwrap();
    done.keep().unwrap();
    std::io::Read::read_to_end(&mut bytes.open_read("u").unwrap(), &mut all).unwrap();
    assert_eq!(all, b"fresh12345");
}

#[tokio::test(flavor = "multi_thread")]
async fn sealing_again_after_a_crash_half_way_finds_the_upload_whole() {
    use object_store::ObjectStore;
    let moto = Moto::start();
    let url = moto.bucket("reseal");
    let endpoint = url
        .split("endpoint=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap();
    let raw = object_store::aws::AmazonS3Builder::from_env()
        .with_bucket_name("reseal")
        .with_endpoint(endpoint)
        .with_allow_http(true)
        .with_region("us-east-1")
        .build()
        .unwrap();
    let state = object_store::path::Path::from("cairn/tus/u/state");

    let data: Vec<u8> = (0..(9u32 << 20)).map(|i| (i % 251) as u8).collect();
    let unsealed = tokio::task::spawn_blocking({
        let (url, data) = (url.clone(), data.clone());
        move || {
            let bytes = S3TusBytes::open(&url).unwrap();
            bytes.create("u").unwrap();
            let mut appender = bytes.appender("u", false).unwrap();
            appender.append(&data).unwrap();
            appender.keep().unwrap();
        }
    });
    unsealed.await.unwrap();
    let before = raw.get(&state).await.unwrap().bytes().await.unwrap();

    // Sealed, then the record of it undone: as if the process died after completing the
    // multipart upload and before rewriting `state`.
    let read_all = |url: String| {
        tokio::task::spawn_blocking(move || {
            let mut all = Vec::new();
            let bytes = S3TusBytes::open(&url).unwrap();
            std::io::Read::read_to_end(&mut bytes.open_read("u").unwrap(), &mut all).unwrap();
            all
        })
    };
    assert!(read_all(url.clone()).await.unwrap() == data);
    raw.put(&state, before.into()).await.unwrap();
    assert!(
        read_all(url).await.unwrap() == data,
        "sealing again finds the completed object"
    );
}
