//! The store on `s3://`, against a local S3-compatible server (moto, installed by `.ci/run`
//! with `pip install 'moto[server]'`): commits with create-if-absent, writers taking turns through separate handles,
//! a transaction, a checkpoint and reopening.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use dynql_core::{TableSchema, Value};
use dynql_storage::{Store, TableOptions, Timestamp, WriteKind};

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_moto() -> (Server, u16) {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("python3")
        .args([
            "-m",
            "moto.server",
            "-H",
            "127.0.0.1",
            "-p",
            &port.to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 is needed to run the local S3 server");
    let server = Server(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the local S3 server (moto) did not start: install it with pip install 'moto[server]'"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let endpoint = format!("http://127.0.0.1:{port}");
    let made = Command::new("python3")
        .args([
            "-c",
            &format!(
                "import boto3; boto3.client('s3', endpoint_url='{endpoint}', region_name='us-east-1', \
                 aws_access_key_id='test', aws_secret_access_key='test').create_bucket(Bucket='dynql')"
            ),
        ])
        .status()
        .unwrap();
    assert!(made.success(), "could not create the test bucket");
    (server, port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_works_on_s3() {
    let (_server, port) = start_moto();
    // The s3:// builder reads the usual AWS_* variables; this test binary has no other test.
    std::env::set_var("AWS_ENDPOINT", format!("http://127.0.0.1:{port}"));
    std::env::set_var("AWS_ALLOW_HTTP", "true");
    std::env::set_var("AWS_ACCESS_KEY_ID", "test");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "test");
    std::env::set_var("AWS_REGION", "us-east-1");
    let url = "s3://dynql/stores/one";
    let schema =
        TableSchema::parse("[{name=k;type=int64;sort_order=ascending};{name=v;type=int64}]")
            .unwrap();
    let s = Store::open(url).unwrap();
    s.create_table("//t", schema, TableOptions::default())
        .await
        .unwrap();
    let row = |k: i64, v: i64| vec![Some(Value::Int64(k)), Some(Value::Int64(v))];

    // Three handles take turns: each must see the others' records before appending. (The
    // commits race for real on file:// stores in the store and transaction tests; moto's
    // conditional PUT is not atomic under load, so racing here would test moto.)
    let writers: Vec<Store> = (0..3).map(|_| Store::open(url).unwrap()).collect();
    for i in 0..5 {
        for (w, s) in writers.iter().enumerate() {
            s.write_rows(
                "//t",
                WriteKind::Overwrite,
                false,
                vec![row(w as i64 * 10 + i, 1)],
            )
            .await
            .unwrap();
        }
    }
    let tx = s.start_transaction(60_000).await.unwrap();
    s.write_rows_in(
        &tx.id,
        "//t",
        WriteKind::Overwrite,
        false,
        vec![row(100, 2)],
    )
    .await
    .unwrap();
    s.commit_transaction(&tx.id).await.unwrap();
    s.checkpoint().await.unwrap();
    s.write_rows(
        "//t",
        WriteKind::Delete,
        false,
        vec![vec![Some(Value::Int64(0)), None]],
    )
    .await
    .unwrap();

    let reopened = Store::open(url).unwrap();
    let rows = reopened.read_rows("//t", Timestamp::MAX).await.unwrap();
    assert_eq!(rows.len(), 15);
    assert!(rows.contains(&vec![Value::Int64(100), Value::Int64(2)]));
    assert!(!rows.contains(&vec![Value::Int64(0), Value::Int64(1)]));
    // Another prefix of the same bucket is another store.
    assert!(Store::open("s3://dynql/stores/two")
        .unwrap()
        .tables()
        .await
        .unwrap()
        .is_empty());
    assert!(Store::open("s3://").is_err());
}
