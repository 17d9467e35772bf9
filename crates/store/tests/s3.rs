//! The S3 backends' suites against two independent S3-compatible servers: moto (see
//! `support/moto.rs`) and SeaweedFS (`support/seaweedfs.rs`).

mod support {
    pub mod moto;
    pub mod seaweedfs;
}

use cairn_store::blobs::{suite, BlobStore};
use cairn_store::s3::{S3Blobs, S3TusBytes};
use cairn_store::tus_bytes;
use support::moto::Moto;
use support::seaweedfs::SeaweedFs;

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
    assert!(blobs.list().unwrap().is_empty());
}

#[test]
fn s3_tus_bytes_pass_the_tus_bytes_suite() {
    let moto = Moto::start();
    let bytes = S3TusBytes::open(&moto.bucket("tus"), 1 << 30).unwrap();
    // Above the 8 MiB part size: the suite's big upload spans parts and a tail.
    tus_bytes::suite::run(&bytes, 9 << 20);
}

#[test]
fn s3_backends_pass_their_suites_on_seaweedfs_too() {
    let seaweedfs = SeaweedFs::start(&["suite"]);
    let url = seaweedfs.bucket("suite");
    suite::run(&S3Blobs::open(&url, "packs").unwrap());
    tus_bytes::suite::run(&S3TusBytes::open(&url, 1 << 30).unwrap(), 9 << 20);
}
