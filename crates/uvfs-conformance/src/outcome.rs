//! What one op produced on one side, before normalisation: an errno or a value. The host
//! helper sends these as JSON lines; [`crate::normalise`] turns them into comparable text.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The result of one op.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The call failed with this Linux errno number.
    Errno(i32),
    /// The call succeeded.
    Ok(Value),
}

/// What a successful call returned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Value {
    /// Success without a value (`0`).
    Unit,
    /// A count, an offset, an fd, a mask or flags.
    Int(i64),
    /// Data read, a link body, an xattr value, a cwd (with its NUL).
    Bytes(Bytes),
    /// An xattr name list (NUL-terminated names, in the order the call gave them).
    XattrList(Bytes),
    /// `stat`, `lstat`, `fstat`, `fstatat`.
    Stat(StatRec),
    /// `statx`.
    Statx(StatxRec),
    /// `statfs`, `fstatfs`, without `f_fsid`.
    StatFs(StatFsRec),
    /// `getdents` or `listdir` entries, in the order the calls gave them; `d_off` dropped.
    Dirents(Vec<DirentRec>),
    /// `getresuid`/`getresgid`, `getgroups`, `capget`.
    Cred(crate::op::cred::CredValue),
}

/// A byte string, carried in JSON as lowercase hex.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bytes(pub Vec<u8>);

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut hex = String::with_capacity(self.0.len() * 2);
        for b in &self.0 {
            hex.push_str(&format!("{b:02x}"));
        }
        s.serialize_str(&hex)
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let hex = String::deserialize(d)?;
        if hex.len() % 2 != 0 {
            return Err(serde::de::Error::custom("odd hex length"));
        }
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).map_err(serde::de::Error::custom))
            .collect::<Result<Vec<u8>, _>>()
            .map(Bytes)
    }
}

/// A timestamp: seconds and nanoseconds since the epoch.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Ts {
    /// Seconds.
    pub sec: i64,
    /// Nanoseconds.
    pub nsec: i64,
}

/// A device number split as `major(3)`/`minor(3)` do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Dev {
    /// Major number.
    pub major: u32,
    /// Minor number.
    pub minor: u32,
}

/// The fields of `struct stat`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)] // The fields are those of `struct stat`, without the `st_` prefix.
pub struct StatRec {
    pub dev: Dev,
    pub ino: u64,
    pub nlink: u64,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub rdev: Dev,
    pub size: i64,
    pub blksize: i64,
    pub blocks: i64,
    pub atime: Ts,
    pub mtime: Ts,
    pub ctime: Ts,
}

/// The fields of `struct statx`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)] // The fields are those of `struct statx`, without the `stx_` prefix.
pub struct StatxRec {
    pub mask: u32,
    pub blksize: u32,
    pub attributes: u64,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
    pub mode: u16,
    pub ino: u64,
    pub size: u64,
    pub blocks: u64,
    pub attributes_mask: u64,
    pub atime: Ts,
    pub btime: Ts,
    pub ctime: Ts,
    pub mtime: Ts,
    pub rdev: Dev,
    pub dev: Dev,
    pub mnt_id: u64,
}

/// The fields of `struct statfs` but `f_fsid`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)] // The fields are those of `struct statfs`, without the `f_` prefix.
pub struct StatFsRec {
    pub fs_type: i64,
    pub bsize: i64,
    pub blocks: u64,
    pub bfree: u64,
    pub bavail: u64,
    pub files: u64,
    pub ffree: u64,
    pub namelen: i64,
    pub frsize: i64,
    pub flags: i64,
}

/// One `linux_dirent64` record without `d_off`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirentRec {
    /// `d_name`.
    pub name: Bytes,
    /// `d_type`.
    pub d_type: u8,
    /// `d_ino`.
    pub ino: u64,
}

/// Decodes the records of a `getdents64` buffer (`struct linux_dirent64`: ino u64, off i64,
/// reclen u16, type u8, NUL-terminated name). Both sides use this decoder, so it is written
/// here from the man page rather than borrowed from uvfs.
pub fn decode_dirents(mut buf: &[u8]) -> Vec<DirentRec> {
    const NAME_AT: usize = 19;
    let mut out = Vec::new();
    while buf.len() >= NAME_AT {
        let ino = u64::from_ne_bytes(buf[0..8].try_into().expect("8 bytes"));
        let reclen = usize::from(u16::from_ne_bytes([buf[16], buf[17]]));
        if reclen < NAME_AT || reclen > buf.len() {
            break;
        }
        let name = &buf[NAME_AT..reclen];
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        out.push(DirentRec {
            name: Bytes(name[..end].to_vec()),
            d_type: buf[18],
            ino,
        });
        buf = &buf[reclen..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_round_trip_through_json() {
        let all = [
            Outcome::Errno(2),
            Outcome::Ok(Value::Unit),
            Outcome::Ok(Value::Bytes(Bytes(vec![0, 0xff, b'a']))),
            Outcome::Ok(Value::Dirents(vec![DirentRec {
                name: Bytes(b"x".to_vec()),
                d_type: 8,
                ino: 7,
            }])),
            Outcome::Ok(Value::Stat(StatRec {
                ino: 3,
                mode: 0o100644,
                ..StatRec::default()
            })),
        ];
        for o in all {
            let j = serde_json::to_string(&o).expect("serialises");
            assert_eq!(
                serde_json::from_str::<Outcome>(&j).expect("parses"),
                o,
                "{j}"
            );
        }
    }

    #[test]
    fn dirent_records_decode_without_offsets() {
        let mut buf = vec![0u8; 24];
        buf[0] = 5;
        buf[16] = 24;
        buf[18] = 4;
        buf[19] = b'.';
        assert_eq!(
            decode_dirents(&buf),
            vec![DirentRec {
                name: Bytes(b".".to_vec()),
                d_type: 4,
                ino: 5
            }]
        );
    }
}
