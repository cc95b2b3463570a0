//! The protocol's parsers and readers on bytes made here, and a client
//! over a socket pair.

use super::conn::*;
use super::errors::*;
use super::handshake::*;
use super::packets::*;
use crate::stream::Stream;
use crate::value::Value;
use mysql_common::constants::CapabilityFlags;
use scalelab_core::ErrorClass;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn run<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

/// A packet: header (length, sequence id) and payload.
fn pkt(seq: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = (payload.len() as u32).to_le_bytes()[..3].to_vec();
    v.push(seq);
    v.extend_from_slice(payload);
    v
}

fn ok(status: u16) -> Vec<u8> {
    let mut v = vec![0, 0, 0];
    v.extend_from_slice(&status.to_le_bytes());
    v.extend_from_slice(&[0, 0]);
    v
}

/// A client over one end of a socket pair; the server's bytes are written
/// to the other end (then closed) by a task.
fn with_server<T>(bytes: Vec<u8>, deprecate_eof: bool, f: impl AsyncFnOnce(&mut MyWire) -> T) -> T {
    run(async move {
        let (a, mut b) = tokio::net::UnixStream::pair().unwrap();
        let mut c = MyWire::new(Stream::Unix(a), deprecate_eof);
        // Write the reply, close the sending side, and drain what the
        // client sends (so its writes never fail).
        let server = tokio::spawn(async move {
            let _ = b.write_all(&bytes).await;
            let _ = b.shutdown().await;
            let mut sink = Vec::new();
            let _ = b.read_to_end(&mut sink).await;
        });
        let r = f(&mut c).await;
        drop(server);
        r
    })
}

#[test]
fn lenenc_reads_every_size_and_refuses_truncation() {
    for n in [0u64, 250, 251, 65_535, 65_536, 0xFF_FFFF, 0x100_0000, u64::MAX] {
        let mut b = Vec::new();
        put_lenenc(&mut b, n);
        assert_eq!(lenenc(&b), Some((n, b.len())), "{n}");
        for cut in 0..b.len() {
            assert_eq!(lenenc(&b[..cut]), None, "{n} cut at {cut}");
        }
    }
    assert_eq!(lenenc(&[0xFB]), None);
    assert_eq!(lenenc(&[0xFF, 1, 2]), None);
}

#[test]
fn error_packets_are_classified_with_or_without_sqlstate() {
    let f = err_packet(b"\xff\xbd\x04#40001Deadlock found when trying to get lock");
    assert_eq!(f.class, ErrorClass::Deadlock);
    assert_eq!(f.message, "ERROR 1213 (40001): Deadlock found when trying to get lock");
    // Before the handshake there is no SQLSTATE.
    let f = err_packet(b"\xff\x10\x04Too many connections");
    assert_eq!((f.class, f.message.as_str()), (ErrorClass::TooManyConnections, "ERROR 1040 (HY000): Too many connections"));
    for bad in [&b""[..], b"\xff", b"\xff\x10"] {
        assert_eq!(err_packet(bad).class, ErrorClass::ConnectionLost);
    }
    assert_eq!(err_packet(b"\xff\x10\x04#4").message, "ERROR 1040 (HY000): #4");
}

#[test]
fn ok_eof_and_prepare_packets_refuse_truncation() {
    let p = [0, 0xFC, 1, 0, 0, 0x0A, 0x00, 0, 0];
    assert_eq!(ok_status(&p), Some(0x000A));
    for cut in 0..7 {
        assert_eq!(ok_status(&p[..cut]), None, "cut at {cut}");
    }
    assert_eq!(terminator_status(&[0xFE, 0, 0, 8, 0], false), Some(8));
    assert_eq!(terminator_status(&[0xFE, 0, 0, 8], false), None);
    let p = [0, 7, 0, 0, 0, 2, 0, 1, 0, 0, 0, 0];
    assert_eq!(prepare_ok(&p), Some((7, 2, 1)));
    assert_eq!(prepare_ok(&p[..8]), None);
    assert_eq!(prepare_ok(&[1; 12]), None);
}

/// A greeting laid out as MariaDB 10.11 sends it.
const GREETING: &[u8] = b"\x0a5.5.5-10.11.14-MariaDB-0+deb12u2\x00\x2a\x00\x00\x00\x3c\x5b\x2e\x2f\x6f\x37\x49\x59\x00\xfe\xf7\x2d\x02\x00\xff\x81\x15\x00\x00\x00\x00\x00\x00\x1d\x00\x00\x00\x27\x66\x31\x6e\x7b\x27\x54\x27\x5d\x77\x56\x44\x00mysql_native_password\x00";

#[test]
fn greetings_parse_and_garbage_is_an_error_not_a_panic() {
    let g = greeting(GREETING).unwrap();
    assert_eq!(g.plugin, b"mysql_native_password");
    assert_eq!(g.nonce.len(), 20);
    assert!(g.capabilities.contains(CapabilityFlags::CLIENT_PROTOCOL_41));
    for cut in 0..GREETING.len() {
        let _ = greeting(&GREETING[..cut]); // anything but a panic
    }
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for _ in 0..2000 {
        let n = (x % 120) as usize;
        let bytes: Vec<u8> = (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let _ = greeting(&bytes);
        let _ = err_packet(&bytes);
        let _ = ok_status(&bytes);
        let _ = lenenc(&bytes);
    }
    assert!(greeting(b"\x09junk").unwrap_err().message.contains("MySQL or MariaDB"));
    assert_eq!(greeting(b"\xff\x10\x04Too many connections").unwrap_err().class, ErrorClass::TooManyConnections);
}

#[test]
fn unsupported_authentication_plugins_are_named() {
    assert_eq!(auth_data(b"mysql_native_password", Some("pw"), &[7; 20]).unwrap().len(), 20);
    assert_eq!(auth_data(b"caching_sha2_password", Some("pw"), &[7; 20]).unwrap().len(), 32);
    assert!(auth_data(b"mysql_native_password", None, &[7; 20]).unwrap().is_empty());
    assert!(auth_data(b"client_ed25519", Some("pw"), &[7; 32]).unwrap_err().message.contains("client_ed25519"));
    assert!(auth_data(b"dialog", Some("pw"), &[]).unwrap_err().message.contains("'dialog'"));
    assert!(rsa_encrypt(b"pw", &[1; 20], b"not a PEM key").is_err());
}

#[test]
fn execute_is_serialized_with_types_and_framed() {
    let mut out = Vec::new();
    let values = [Value::Int(-2), Value::Text("ab".into())];
    build_execute(&mut out, 5, &[1, 0], &values);
    let mut want = vec![0x17, 5, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0xFD, 0, 0x08, 0, 2, b'a', b'b'];
    want.extend_from_slice(&(-2i64).to_le_bytes());
    assert_eq!(out, pkt(0, &want));
    build_execute(&mut out, 1, &[], &values);
    assert_eq!(out, pkt(0, &[0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0]));
}

#[test]
fn large_payloads_are_split_into_packets() {
    let mut out = vec![0; 4 + MAX_PAYLOAD];
    frame(&mut out, 0);
    assert_eq!(out.len(), 8 + MAX_PAYLOAD);
    assert_eq!(&out[..4], &[0xFF, 0xFF, 0xFF, 0]);
    assert_eq!(&out[4 + MAX_PAYLOAD..], &[0, 0, 0, 1]);
    let mut out = vec![0; 4 + MAX_PAYLOAD + 3];
    frame(&mut out, 0);
    assert_eq!(&out[4 + MAX_PAYLOAD..4 + MAX_PAYLOAD + 4], &[3, 0, 0, 1]);
}

/// A result set with one column: count, definition, [EOF], rows, terminator.
fn result_set(rows: &[Vec<u8>], deprecate_eof: bool, status: u16) -> Vec<u8> {
    let mut v = pkt(1, &[1]);
    v.extend(pkt(2, b"\x03def\x00\x00\x00\x01c\x00\x0c\x3f\x00\x0b\x00\x00\x00\x03\x00\x00\x00\x00\x00"));
    if !deprecate_eof {
        v.extend(pkt(3, &[0xFE, 0, 0, 2, 0]));
    }
    for r in rows {
        v.extend_from_slice(r);
    }
    if deprecate_eof {
        let mut t = ok(status);
        t[0] = 0xFE;
        v.extend(pkt(9, &t));
    } else {
        let mut t = vec![0xFE, 0, 0];
        t.extend_from_slice(&status.to_le_bytes());
        v.extend(pkt(9, &t));
    }
    v
}

#[test]
fn result_sets_are_skipped_with_and_without_eof_packets() {
    for deprecate_eof in [false, true] {
        let rows = vec![pkt(4, &[0, 0, 1, b'x']), pkt(5, &[0, 0, 1, b'y'])];
        // Two result sets (the first says more follow), then an OK, then the next reply.
        let mut bytes = result_set(&rows, deprecate_eof, SERVER_MORE_RESULTS_EXISTS);
        bytes.extend(result_set(&rows, deprecate_eof, SERVER_MORE_RESULTS_EXISTS));
        bytes.extend(pkt(1, &ok(0)));
        bytes.extend(pkt(1, &ok(0)));
        with_server(bytes, deprecate_eof, async |c: &mut MyWire| {
            c.read_result().await.unwrap();
            c.read_result().await.unwrap();
            assert!(c.inbox.data().is_empty());
        });
    }
}

#[test]
fn a_row_over_16_mb_spans_packets() {
    // One 20 MB row: a 0xFFFFFF packet led by 0xFE (a lenenc of 8 bytes:
    // it must not be taken for the terminator), then the rest.
    let total = 20 << 20;
    let mut row = vec![0xFE];
    row.extend_from_slice(&((total - 9) as u64).to_le_bytes());
    row.resize(total, b'z');
    let mut rows = pkt(4, &row[..MAX_PAYLOAD]);
    rows.extend(pkt(5, &row[MAX_PAYLOAD..]));
    let mut bytes = result_set(&[rows], true, 0);
    bytes.extend(pkt(1, &ok(0)));
    with_server(bytes, true, async |c: &mut MyWire| {
        c.read_result().await.unwrap();
        c.read_result().await.unwrap();
    });
}

#[test]
fn errors_mid_result_and_truncated_replies_fail_cleanly() {
    let mut bytes = pkt(1, &[1]);
    bytes.extend(pkt(2, b"\x03def"));
    bytes.extend(pkt(3, b"\xff\xb5\x04#HY000Lock wait timeout exceeded"));
    bytes.extend(pkt(1, &ok(0)));
    with_server(bytes, true, async |c: &mut MyWire| {
        let f = c.read_result().await.unwrap_err().at_query();
        assert_eq!(f.class, ErrorClass::LockWaitTimeout, "{}", f.message);
        assert!(f.message.starts_with("ERROR 1205 (HY000): Lock wait"), "{}", f.message);
        c.read_result().await.unwrap();
    });
    // The server closes in the middle of a row.
    let mut bytes = pkt(1, &[1]);
    bytes.extend(pkt(2, b"\x03def"));
    bytes.extend(&pkt(3, &[0, 0, 5, b'a', b'b', b'c', b'd', b'e'])[..6]);
    with_server(bytes, true, async |c: &mut MyWire| {
        let f = c.read_result().await.unwrap_err().at_query();
        assert_eq!(f.class, ErrorClass::ConnectionLost);
        assert!(f.message.starts_with("connection lost: "), "{}", f.message);
    });
    // Garbage: a bad column count, an empty packet, a 0xFB.
    for payload in [&[0xFFu8; 0][..], &[0xFB], &[0xFC, 1], &[0xFD, 0xFF, 0xFF, 0xFF]] {
        with_server(pkt(1, payload), true, async |c: &mut MyWire| {
            let f = c.read_result().await.unwrap_err().at_query();
            assert_eq!(f.class, ErrorClass::ConnectionLost, "{payload:?}: {}", f.message);
        });
    }
}

#[test]
fn prepare_skips_definitions() {
    for deprecate_eof in [false, true] {
        let mut bytes = pkt(1, &[0, 3, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0]);
        for i in 0..3 {
            bytes.extend(pkt(2 + i, b"\x03def"));
            if i != 0 && !deprecate_eof {
                bytes.extend(pkt(2, &[0xFE, 0, 0, 2, 0]));
            }
        }
        bytes.extend(pkt(1, b"\xff\x28\x04#42000You have an error in your SQL syntax"));
        with_server(bytes, deprecate_eof, async |c: &mut MyWire| {
            let s = c.prepare("SELECT c FROM t WHERE id = ? AND k = ?").await.unwrap();
            assert_eq!((s.id, s.params()), (3, 2));
            let f = c.prepare("SELEC").await.unwrap_err();
            assert_eq!((f.class, f.message.as_str()), (ErrorClass::SqlError, "ERROR 1064 (42000): You have an error in your SQL syntax"));
        });
    }
}
