//! `struct linux_dirent64`, as `getdents64(2)` writes it.

/// Offset of `d_name` in `struct linux_dirent64`.
const NAME_OFFSET: usize = 19;

/// One decoded directory entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dirent {
    /// Inode number.
    pub ino: u64,
    /// Opaque cursor to resume after this entry.
    pub off: i64,
    /// `DT_*` type.
    pub d_type: u8,
    /// Name bytes, without NUL.
    pub name: Vec<u8>,
}

impl Dirent {
    /// The record length of an entry with a name of `name_len` bytes (8-byte aligned, NUL included).
    pub const fn reclen(name_len: usize) -> usize {
        (NAME_OFFSET + name_len + 1 + 7) & !7
    }

    /// Encodes one record into `buf`; returns its length or `None` if it does not fit.
    pub fn encode(buf: &mut [u8], ino: u64, off: i64, d_type: u8, name: &[u8]) -> Option<usize> {
        let len = Self::reclen(name.len());
        let rec = buf.get_mut(..len)?;
        rec.fill(0);
        rec[0..8].copy_from_slice(&ino.to_ne_bytes());
        rec[8..16].copy_from_slice(&off.to_ne_bytes());
        rec[16..18].copy_from_slice(&(len as u16).to_ne_bytes());
        rec[18] = d_type;
        rec[NAME_OFFSET..NAME_OFFSET + name.len()].copy_from_slice(name);
        Some(len)
    }

    /// Decodes every record of a `getdents64` result.
    pub fn parse(mut buf: &[u8]) -> Vec<Dirent> {
        let mut out = Vec::new();
        while buf.len() >= NAME_OFFSET {
            let word = |r: core::ops::Range<usize>| {
                let mut a = [0u8; 8];
                a.copy_from_slice(&buf[r]);
                a
            };
            let ino = u64::from_ne_bytes(word(0..8));
            let off = i64::from_ne_bytes(word(8..16));
            let reclen = u16::from_ne_bytes([buf[16], buf[17]]) as usize;
            if reclen < NAME_OFFSET || reclen > buf.len() {
                break;
            }
            let name = &buf[NAME_OFFSET..reclen];
            let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            out.push(Dirent {
                ino,
                off,
                d_type: buf[18],
                name: name[..end].to_vec(),
            });
            buf = &buf[reclen..];
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_then_parse_round_trips_and_aligns_records() {
        let mut buf = [0u8; 64];
        let a = Dirent::encode(&mut buf, 7, 1, 8, b"abc").expect("fits");
        assert_eq!(a, 24);
        let b = Dirent::encode(&mut buf[a..], 9, 2, 4, b"directory").expect("fits");
        assert_eq!(b, 32);
        let got = Dirent::parse(&buf[..a + b]);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].name, b"abc");
        assert_eq!(got[1].ino, 9);
        assert_eq!(got[1].d_type, 4);
        assert!(Dirent::encode(&mut buf[..10], 1, 1, 1, b"x").is_none());
    }
}
