//! The host column's figure: the growth of the kernel's slab caches, from `/proc/slabinfo`
//! (root only), between a reading before the first `mkdir` and one after the last `close`.

use std::collections::BTreeMap;

use anyhow::Context;
use serde::{Deserialize, Serialize};

/// The caches a tmpfs create allocates from, counted in the host's figure (measured on Linux
/// 6.18 by diffing every cache around 100,000 creates: these grow by about one object per file,
/// or a fraction for the trees):
/// - `dentry`: the name's dentry (Linux: `d_alloc()` in fs/dcache.c);
/// - `shmem_inode_cache`: the inode with tmpfs's part (`shmem_alloc_inode()` in mm/shmem.c);
/// - `lsm_inode_cache`: the security modules' inode blob (`lsm_inode_alloc()` in
///   security/security.c), absent on kernels without one;
/// - `maple_node`: the directory's offset map that `getdents` walks (`simple_offset_add()` in
///   fs/libfs.c);
/// - `radix_tree_node`: page-cache and xarray nodes, none for an empty file; counted so that a
///   kernel that starts using them per file shows it.
pub const COUNTED_CACHES: [&str; 5] = [
    "dentry",
    "shmem_inode_cache",
    "lsm_inode_cache",
    "maple_node",
    "radix_tree_node",
];

/// A cache not counted is listed when it grew by at least one object per this many files.
pub const OTHER_CACHE_FILES_PER_OBJECT: u64 = 100;

/// One cache's line of `/proc/slabinfo` (version 2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlabCache {
    /// Objects in use.
    pub active_objs: u64,
    /// Size of one object, bytes.
    pub objsize_bytes: u64,
    /// Pages of one slab.
    pub pages_per_slab: u64,
    /// Slabs of the cache.
    pub num_slabs: u64,
}

impl SlabCache {
    /// Bytes of the objects in use.
    pub fn object_bytes(&self) -> u64 {
        self.active_objs * self.objsize_bytes
    }

    /// Bytes of the cache's slabs.
    pub fn slab_bytes(&self, page_bytes: u64) -> u64 {
        self.num_slabs * self.pages_per_slab * page_bytes
    }
}

/// A reading of `/proc/slabinfo`: every cache by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlabInfo {
    caches: BTreeMap<String, SlabCache>,
}

impl SlabInfo {
    /// Reads `/proc/slabinfo`.
    ///
    /// # Errors
    /// The file cannot be read (it is mode 0400: root only) or is not version 2.1.
    pub fn read() -> anyhow::Result<SlabInfo> {
        let text = std::fs::read_to_string("/proc/slabinfo").context("reading /proc/slabinfo")?;
        SlabInfo::parse(&text).map_err(anyhow::Error::msg)
    }

    /// Parses the text of `/proc/slabinfo`:
    /// `name active_objs num_objs objsize objperslab pagesperslab : tunables .. : slabdata
    /// active_slabs num_slabs sharedavail`.
    ///
    /// # Errors
    /// A message naming the first line that does not have that shape.
    pub fn parse(text: &str) -> Result<SlabInfo, String> {
        let mut lines = text.lines();
        match lines.next() {
            Some(l) if l.trim() == "slabinfo - version: 2.1" => {}
            other => return Err(format!("/proc/slabinfo: unknown version line {other:?}")),
        }
        let mut caches = BTreeMap::new();
        for line in lines.filter(|l| !l.starts_with('#')) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let num = |i: usize| -> Result<u64, String> {
                f.get(i)
                    .and_then(|x| x.parse().ok())
                    .ok_or_else(|| format!("/proc/slabinfo: cannot read field {i} of {line:?}"))
            };
            // The slabdata section: the three numbers after the second ':'.
            let slabdata = f
                .iter()
                .position(|&x| x == "slabdata")
                .ok_or_else(|| format!("/proc/slabinfo: no slabdata in {line:?}"))?;
            let cache = SlabCache {
                active_objs: num(1)?,
                objsize_bytes: num(3)?,
                pages_per_slab: num(5)?,
                num_slabs: num(slabdata + 2)?,
            };
            caches.insert(f[0].to_string(), cache);
        }
        Ok(SlabInfo { caches })
    }
}

/// How one cache grew between two readings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CacheGrowth {
    /// The cache.
    pub name: String,
    /// Whether it is one of [`COUNTED_CACHES`].
    pub counted: bool,
    /// Whether it exists on this kernel (a counted cache may not).
    pub present: bool,
    /// Objects in use, after minus before.
    pub objects: i64,
    /// Size of one object, bytes.
    pub objsize_bytes: u64,
    /// Bytes of objects in use, after minus before.
    pub object_bytes: i64,
    /// Bytes of slabs, after minus before.
    pub slab_bytes: i64,
}

/// The growth from `before` to `after` of every counted cache (absent ones included, as zero),
/// then of every other cache whose object count moved by at least `files /`
/// [`OTHER_CACHE_FILES_PER_OBJECT`], largest first.
pub fn growth(
    before: &SlabInfo,
    after: &SlabInfo,
    files: u64,
    page_bytes: u64,
) -> Vec<CacheGrowth> {
    let of = |name: &str, counted: bool| -> CacheGrowth {
        let a = after.caches.get(name);
        let b = before.caches.get(name);
        let get = |c: Option<&SlabCache>, f: &dyn Fn(&SlabCache) -> u64| c.map_or(0, f) as i64;
        CacheGrowth {
            name: name.to_string(),
            counted,
            present: a.is_some(),
            objects: get(a, &|c| c.active_objs) - get(b, &|c| c.active_objs),
            objsize_bytes: a.or(b).map_or(0, |c| c.objsize_bytes),
            object_bytes: get(a, &|c| c.object_bytes()) - get(b, &|c| c.object_bytes()),
            slab_bytes: get(a, &|c| c.slab_bytes(page_bytes))
                - get(b, &|c| c.slab_bytes(page_bytes)),
        }
    };
    let mut v: Vec<CacheGrowth> = COUNTED_CACHES.iter().map(|n| of(n, true)).collect();
    let threshold = (files / OTHER_CACHE_FILES_PER_OBJECT).max(1) as i64;
    let mut others: Vec<CacheGrowth> = after
        .caches
        .keys()
        .chain(before.caches.keys())
        .filter(|n| !COUNTED_CACHES.contains(&n.as_str()))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|n| of(n, false))
        .filter(|g| g.objects.abs() >= threshold)
        .collect();
    others.sort_by_key(|g| std::cmp::Reverse(g.object_bytes.abs()));
    v.extend(others);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines in the shape of Linux 6.18's `/proc/slabinfo` (`cache_show()` in
    /// mm/slab_common.c); numbers made up.
    fn info(dentry_active: u64, dentry_slabs: u64, kmalloc_active: u64) -> SlabInfo {
        let text = format!(
            "slabinfo - version: 2.1\n\
             # name            <active_objs> <num_objs> <objsize> <objperslab> <pagesperslab> : tunables <limit> <batchcount> <sharedfactor> : slabdata <active_slabs> <num_slabs> <sharedavail>\n\
             shmem_inode_cache    255    273    752   21    4 : tunables    0    0    0 : slabdata     13     13      0\n\
             dentry            {dentry_active} 437892    192   21    1 : tunables    0    0    0 : slabdata      7  {dentry_slabs}      0\n\
             kmalloc-192         {kmalloc_active}    294    192   21    1 : tunables    0    0    0 : slabdata     14     14      0\n\
             kmalloc-8          1000   1024      8  512    1 : tunables    0    0    0 : slabdata      2      2      0\n"
        );
        SlabInfo::parse(&text).expect("parses")
    }

    #[test]
    fn growth_counts_the_named_caches_and_lists_big_others() {
        let before = info(1000, 100, 10);
        let after = info(3000, 150, 200);
        let g = growth(&before, &after, 2000, 4096);
        let names: Vec<&str> = g.iter().map(|c| c.name.as_str()).collect();
        // The counted caches in order (absent ones too), then kmalloc-192 (190 objects >=
        // 2000/100); kmalloc-8 did not move.
        assert_eq!(
            names,
            [
                "dentry",
                "shmem_inode_cache",
                "lsm_inode_cache",
                "maple_node",
                "radix_tree_node",
                "kmalloc-192"
            ]
        );
        let dentry = &g[0];
        assert!(dentry.counted && dentry.present);
        assert_eq!(dentry.objects, 2000);
        assert_eq!(dentry.object_bytes, 2000 * 192);
        assert_eq!(dentry.slab_bytes, 50 * 4096);
        assert_eq!(g[1].objects, 0);
        assert!(!g[2].present && g[2].objects == 0);
        assert!(!g[5].counted && g[5].objects == 190);
    }

    #[test]
    fn parse_refuses_what_it_does_not_know() {
        assert!(SlabInfo::parse("slabinfo - version: 1.1\n").is_err());
        assert!(SlabInfo::parse("slabinfo - version: 2.1\ndentry 1 2\n").is_err());
        assert_eq!(
            SlabInfo::parse("slabinfo - version: 2.1\n"),
            Ok(SlabInfo::default())
        );
    }
}
