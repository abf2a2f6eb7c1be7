//! Messages between the observer and its actors: a 4-byte little-endian length, then that
//! many bytes of JSON, over a stream socket.

use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::proc::wait_readable;
use super::sys;

/// Largest message accepted (a read of a few megabytes, hex-encoded, fits).
const MAX_MESSAGE: usize = 1 << 28;

fn write_all(fd: i32, mut buf: &[u8]) -> Result<(), String> {
    while !buf.is_empty() {
        match sys::write(fd, buf) {
            Ok(n) => buf = &buf[n as usize..],
            Err(libc::EINTR) => {}
            Err(e) => {
                return Err(format!(
                    "write to fd {fd}: {}",
                    std::io::Error::from_raw_os_error(e)
                ))
            }
        }
    }
    Ok(())
}

fn read_exact(fd: i32, buf: &mut [u8]) -> Result<(), String> {
    let mut got = 0;
    while got < buf.len() {
        match sys::read(fd, &mut buf[got..]) {
            Ok(0) => return Err(format!("fd {fd} closed")),
            Ok(n) => got += n as usize,
            Err(libc::EINTR) => {}
            Err(e) => {
                return Err(format!(
                    "read from fd {fd}: {}",
                    std::io::Error::from_raw_os_error(e)
                ))
            }
        }
    }
    Ok(())
}

/// Sends one message.
///
/// # Errors
/// A message if the peer is gone.
pub fn send<T: Serialize>(fd: i32, msg: &T) -> Result<(), String> {
    let body = serde_json::to_vec(msg).expect("protocol messages serialise");
    let mut framed = Vec::with_capacity(body.len() + 4);
    framed.extend_from_slice(&(body.len() as u32).to_le_bytes());
    framed.extend_from_slice(&body);
    write_all(fd, &framed)
}

/// Receives one message, waiting at most `timeout` for it to start (forever with `None`).
///
/// # Errors
/// A message on timeout, a closed peer or a malformed message.
pub fn recv<T: DeserializeOwned>(fd: i32, timeout: Option<Duration>) -> Result<T, String> {
    if let Some(t) = timeout {
        if !wait_readable(fd, t) {
            return Err(format!("no answer within {} s", t.as_secs()));
        }
    }
    let mut len = [0u8; 4];
    read_exact(fd, &mut len)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_MESSAGE {
        return Err(format!("message of {len} bytes"));
    }
    let mut body = vec![0u8; len];
    read_exact(fd, &mut body)?;
    serde_json::from_slice(&body).map_err(|e| format!("malformed message: {e}"))
}
