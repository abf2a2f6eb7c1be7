//! tmpfs mount options (`size=`, `nr_inodes=`, `mode=`, `uid=`, `gid=`).
//! Linux: `shmem_parse_one()` in mm/shmem.c.

use crate::abi::{Errno, Result, PAGE_SIZE};

/// Parsed tmpfs options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TmpfsOptions {
    /// Size limit in pages (`None`: not given; `Some(0)`: unlimited).
    pub max_blocks: Option<u64>,
    /// Inode limit (`None`: not given; `Some(0)`: unlimited).
    pub max_inodes: Option<u64>,
    /// Root directory permission bits.
    pub mode: Option<u32>,
    /// Root directory owner.
    pub uid: Option<u32>,
    /// Root directory group.
    pub gid: Option<u32>,
}

/// Physical memory in bytes (the base of tmpfs's default limits and of `size=N%`).
pub fn total_ram_bytes() -> u64 {
    let info = rustix::system::sysinfo();
    (info.totalram as u64).saturating_mul(u64::from(info.mem_unit).max(1))
}

fn parse_memparse(v: &str) -> Result<u64> {
    let (num, mult) = match v.as_bytes().last() {
        Some(b'k' | b'K') => (&v[..v.len() - 1], 1u64 << 10),
        Some(b'm' | b'M') => (&v[..v.len() - 1], 1 << 20),
        Some(b'g' | b'G') => (&v[..v.len() - 1], 1 << 30),
        Some(b't' | b'T') => (&v[..v.len() - 1], 1 << 40),
        Some(b'p' | b'P') => (&v[..v.len() - 1], 1 << 50),
        Some(b'e' | b'E') => (&v[..v.len() - 1], 1 << 60),
        _ => (v, 1),
    };
    let n = parse_c_ulong(num)?;
    n.checked_mul(mult).ok_or(Errno::EINVAL)
}

fn parse_c_ulong(s: &str) -> Result<u64> {
    let r = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16)
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8)
    } else {
        s.parse::<u64>()
    };
    r.map_err(|_| Errno::EINVAL)
}

impl TmpfsOptions {
    /// Parses a comma-separated option string.
    ///
    /// # Errors
    /// `EINVAL` for an unknown option or a bad value.
    pub fn parse(data: Option<&str>) -> Result<TmpfsOptions> {
        let mut o = TmpfsOptions::default();
        let Some(data) = data else { return Ok(o) };
        for opt in data.split(',').filter(|s| !s.is_empty()) {
            let (k, v) = opt.split_once('=').unwrap_or((opt, ""));
            match k {
                "size" => {
                    let bytes = if let Some(p) = v.strip_suffix('%') {
                        let pct = parse_c_ulong(p)?;
                        total_ram_bytes() / 100 * pct
                    } else {
                        parse_memparse(v)?
                    };
                    o.max_blocks = Some(bytes.div_ceil(PAGE_SIZE));
                }
                "nr_blocks" => o.max_blocks = Some(parse_memparse(v)?),
                "nr_inodes" => o.max_inodes = Some(parse_memparse(v)?),
                "mode" => {
                    let m = u32::from_str_radix(v, 8).map_err(|_| Errno::EINVAL)?;
                    o.mode = Some(m & 0o7777);
                }
                "uid" => o.uid = Some(v.parse().map_err(|_| Errno::EINVAL)?),
                "gid" => o.gid = Some(v.parse().map_err(|_| Errno::EINVAL)?),
                // Accepted and without effect here, as on a kernel without huge pages or NUMA.
                "huge" | "mpol" | "inode32" | "inode64" | "noswap" => {}
                _ => return Err(Errno::EINVAL),
            }
        }
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes_modes_and_rejects_unknown_options() {
        let o = TmpfsOptions::parse(Some("size=1m,nr_inodes=10k,mode=0755,uid=5")).expect("valid");
        assert_eq!(o.max_blocks, Some(256));
        assert_eq!(o.max_inodes, Some(10240));
        assert_eq!(o.mode, Some(0o755));
        assert_eq!(o.uid, Some(5));
        assert_eq!(TmpfsOptions::parse(Some("bogus=1")), Err(Errno::EINVAL));
        assert_eq!(TmpfsOptions::parse(Some("size=abc")), Err(Errno::EINVAL));
        assert_eq!(
            TmpfsOptions::parse(Some("size=4097"))
                .expect("valid")
                .max_blocks,
            Some(2)
        );
    }
}
