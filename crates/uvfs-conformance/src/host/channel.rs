//! Messages between the observer and its actors: a 4-byte little-endian length, then that
//! many bytes of JSON, over a stream socket.

use serde::de::DeserializeOwned;
use serde::Serialize;

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

/// Bytes read at once: a whole message in one `read` in the common case (there is never more
/// than one message in flight on a socket); longer ones take a second read.
const FIRST_READ: usize = 4096;

/// Receives one message. On a socket with a receive timeout (`SO_RCVTIMEO`, see
/// [`super::proc::set_receive_timeout`]) a silent peer is an error after it.
///
/// # Errors
/// A message on timeout, a closed peer or a malformed message.
pub fn recv<T: DeserializeOwned>(fd: i32) -> Result<T, String> {
    let mut buf = vec![0u8; FIRST_READ];
    let mut got = loop {
        match sys::read(fd, &mut buf) {
            Ok(0) => return Err(format!("fd {fd} closed")),
            Ok(n) => break n as usize,
            Err(libc::EINTR) => {}
            Err(libc::EAGAIN) => return Err("no answer in time".into()),
            Err(e) => {
                return Err(format!(
                    "read from fd {fd}: {}",
                    std::io::Error::from_raw_os_error(e)
                ))
            }
        }
    };
    if got < 4 {
        let mut rest = [0u8; 4];
        read_exact(fd, &mut rest[got..])?;
        buf[got..4].copy_from_slice(&rest[got..]);
        got = 4;
    }
    let len = u32::from_le_bytes(buf[..4].try_into().expect("4 bytes")) as usize;
    if len > MAX_MESSAGE || got > len + 4 {
        return Err(format!("message of {len} bytes ({got} read)"));
    }
    buf.resize(len + 4, 0);
    read_exact(fd, &mut buf[got..])?;
    serde_json::from_slice(&buf[4..]).map_err(|e| format!("malformed message: {e}"))
}
