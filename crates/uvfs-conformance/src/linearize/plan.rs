//! What one seed runs: a random initial tree and one short list of operations per thread,
//! over a name space small enough that the threads keep meeting each other's names.
//!
//! The names: two fixed directories `/a` and `/b` that no operation touches, and the leaves
//! `x`, `y`, `z` in `/a` (one-directory plans) or `x`, `y` in each of `/a` and `/b`
//! (two-directory plans, which add cross-directory `rename` and `link`). Operations name
//! leaves only, so every path walk crosses only fixed directories: path resolution is not
//! atomic in Linux (a walk can see a directory before a rename and its child after it), and a
//! checker that let walks cross moving directories would flag Linux's own behaviour. For the
//! same reason symbolic links are created, renamed, listed and removed but never followed
//! (`O_NOFOLLOW`, `lstat`, `linkat` without `AT_SYMLINK_FOLLOW`): Linux follows a link and
//! then looks its target up in a separate step.

use std::fmt;

use uvfs::abi::RenameFlags;

use super::rng::Rng;

/// The fixed directories, as `/a` and `/b`.
pub const DIRS: [&str; 2] = ["a", "b"];
/// The leaf names of a one-directory plan.
const LEAVES_ONE_DIR: [&str; 3] = ["x", "y", "z"];
/// The leaf names in each directory of a two-directory plan.
const LEAVES_TWO_DIRS: [&str; 2] = ["x", "y"];
/// The child of a directory created non-empty by the initial state (never named by an
/// operation; it makes `rmdir` and a rename over the directory fail with `ENOTEMPTY`).
pub const INNER_CHILD: &str = "c";
/// Targets of the symbolic links (never followed).
const LINK_TARGETS: [&str; 2] = ["x", "../b/y"];

/// A leaf: `/<dir>/<leaf>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Leaf {
    /// Index into [`DIRS`].
    pub dir: u8,
    /// The name.
    pub name: &'static str,
}

impl Leaf {
    /// The absolute path.
    pub fn path(&self) -> String {
        format!("/{}/{}", DIRS[usize::from(self.dir)], self.name)
    }
}

impl fmt::Display for Leaf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\"", self.path())
    }
}

/// What the initial state puts at a leaf (in plan order, so a hard link names an earlier
/// leaf).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InitNode {
    /// A regular file.
    File,
    /// Another name for the file at an earlier leaf.
    HardLink(Leaf),
    /// A directory, with [`INNER_CHILD`] in it when `non_empty`.
    Dir {
        /// Holds one regular file.
        non_empty: bool,
    },
    /// A symbolic link.
    Symlink(&'static str),
}

/// One operation of a thread. Each is one system call (two for the opens, which close the fd
/// again; three for [`Op::List`]: open, `getdents64` until it returns 0, close).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// `renameat2(from, to, flags)`.
    Rename {
        /// Old name.
        from: Leaf,
        /// New name.
        to: Leaf,
        /// 0, `RENAME_NOREPLACE`, `RENAME_EXCHANGE` or `RENAME_WHITEOUT`.
        flags: RenameFlags,
    },
    /// `linkat(from, to, 0)`.
    Link {
        /// Existing name.
        from: Leaf,
        /// New name.
        to: Leaf,
    },
    /// `unlinkat(leaf, 0)`.
    Unlink(Leaf),
    /// `rmdir(leaf)`.
    Rmdir(Leaf),
    /// `mkdir(leaf, 0755)`.
    Mkdir(Leaf),
    /// `symlink(target, leaf)`.
    Symlink {
        /// The link's body.
        target: &'static str,
        /// Where.
        at: Leaf,
    },
    /// `open(leaf, O_WRONLY|O_CREAT|O_EXCL, 0644)`; the result is the opened inode.
    CreateExcl(Leaf),
    /// `open(leaf, O_WRONLY|O_CREAT|O_NOFOLLOW, 0644)`; the result is the opened inode.
    Create(Leaf),
    /// `lstat(leaf)`: the inode and its type.
    Lstat(Leaf),
    /// The entries of `/a` or `/b` (index into [`DIRS`]) in `getdents64` order: one call with
    /// a buffer large enough for the whole directory.
    List(u8),
}

impl Op {
    /// The number of linearization points Linux gives the operation: one for most, two for
    /// `link` (Linux's `do_linkat()` looks the old name up without a lock, then creates the
    /// new one under the directory lock, linking whatever inode the lookup found: a rename or
    /// unlink of the old name in between does not stop it). The serial oracle interleaves
    /// these steps.
    pub fn serial_steps(&self) -> usize {
        match self {
            Op::Link { .. } => 2,
            _ => 1,
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Rename { from, to, flags } => {
                let name = if flags.is_empty() {
                    "0"
                } else if *flags == RenameFlags::NOREPLACE {
                    "RENAME_NOREPLACE"
                } else if *flags == RenameFlags::EXCHANGE {
                    "RENAME_EXCHANGE"
                } else {
                    "RENAME_WHITEOUT"
                };
                write!(f, "renameat2({from}, {to}, {name})")
            }
            Op::Link { from, to } => write!(f, "link({from}, {to})"),
            Op::Unlink(l) => write!(f, "unlink({l})"),
            Op::Rmdir(l) => write!(f, "rmdir({l})"),
            Op::Mkdir(l) => write!(f, "mkdir({l}, 0755)"),
            Op::Symlink { target, at } => write!(f, "symlink(\"{target}\", {at})"),
            Op::CreateExcl(l) => write!(f, "open({l}, O_WRONLY|O_CREAT|O_EXCL, 0644)"),
            Op::Create(l) => write!(f, "open({l}, O_WRONLY|O_CREAT|O_NOFOLLOW, 0644)"),
            Op::Lstat(l) => write!(f, "lstat({l})"),
            Op::List(d) => write!(f, "getdents64(\"/{}\")", DIRS[usize::from(*d)]),
        }
    }
}

/// Which operations the generator may choose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reads {
    /// `lstat` but not the directory listing.
    LstatOnly,
    /// `lstat` and `getdents64`.
    LstatAndList,
}

/// One seed's plan.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The seed it was generated from.
    pub seed: u64,
    /// The initial tree below `/a` and `/b`, in creation order.
    pub init: Vec<(Leaf, InitNode)>,
    /// One operation list per thread.
    pub threads: Vec<Vec<Op>>,
}

impl Plan {
    /// The number of serial orders of the plan's steps ([`Op::serial_steps`]) that keep each
    /// thread's order: the multinomial coefficient `(n1 + ... + nk)! / (n1! ... nk!)` of the
    /// threads' step counts.
    pub fn interleavings(&self) -> u64 {
        multinomial(self.steps())
    }

    /// Each thread's number of steps.
    pub fn steps(&self) -> Vec<usize> {
        self.threads
            .iter()
            .map(|t| t.iter().map(Op::serial_steps).sum())
            .collect()
    }

    /// The total number of operations.
    pub fn ops(&self) -> usize {
        self.threads.iter().map(Vec::len).sum()
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "seed {}", self.seed)?;
        write!(f, "initial state: /a, /b")?;
        for (leaf, node) in &self.init {
            match node {
                InitNode::File => write!(f, ", {leaf} file")?,
                InitNode::HardLink(of) => write!(f, ", {leaf} link of {of}")?,
                InitNode::Dir { non_empty: false } => write!(f, ", {leaf} dir")?,
                InitNode::Dir { non_empty: true } => {
                    write!(f, ", {leaf} dir holding \"{INNER_CHILD}\"")?
                }
                InitNode::Symlink(t) => write!(f, ", {leaf} symlink -> \"{t}\"")?,
            }
        }
        writeln!(f)?;
        for (i, ops) in self.threads.iter().enumerate() {
            writeln!(f, "thread {i}:")?;
            for op in ops {
                writeln!(f, "    {op}")?;
            }
        }
        Ok(())
    }
}

/// `(n1 + ... + nk)! / (n1! ... nk!)` for the lengths `n1 ... nk`.
pub fn multinomial(lengths: impl IntoIterator<Item = usize>) -> u64 {
    let mut total = 0u64;
    let mut count = 1u64;
    for n in lengths {
        for i in 1..=n as u64 {
            total += 1;
            // Going from C(total - 1, i - 1) to C(total, i) multiplies by total / i; the
            // division is exact because the result is a binomial coefficient times `count`.
            count = count * total / i;
        }
    }
    count
}

/// The largest number of serial orders a plan may have (the oracle runs each): two threads of
/// five single-step operations.
pub const MAX_INTERLEAVINGS: u64 = 252;

/// Generates the plan of `seed`: 2 threads of 2 to 5 operations (one seed in five: 3 threads
/// of 1 to 3), at most [`MAX_INTERLEAVINGS`] serial orders.
pub fn generate(seed: u64, reads: Reads) -> Plan {
    let mut rng = Rng::new(seed, 1);
    let two_dirs = rng.chance(50);
    let leaves: Vec<Leaf> = if two_dirs {
        (0..2u8)
            .flat_map(|dir| LEAVES_TWO_DIRS.iter().map(move |&name| Leaf { dir, name }))
            .collect()
    } else {
        LEAVES_ONE_DIR
            .iter()
            .map(|&name| Leaf { dir: 0, name })
            .collect()
    };
    let mut init: Vec<(Leaf, InitNode)> = Vec::new();
    for &leaf in &leaves {
        let files: Vec<Leaf> = init
            .iter()
            .filter(|(_, n)| *n == InitNode::File)
            .map(|(l, _)| *l)
            .collect();
        let node = match rng.weighted(&[35, 28, 10, 12, 6, 9]) {
            0 => continue,
            1 => InitNode::File,
            2 if !files.is_empty() => {
                InitNode::HardLink(files[rng.below(files.len() as u64) as usize])
            }
            2 => InitNode::File,
            3 => InitNode::Dir { non_empty: false },
            4 => InitNode::Dir { non_empty: true },
            _ => InitNode::Symlink(LINK_TARGETS[rng.below(2) as usize]),
        };
        init.push((leaf, node));
    }
    loop {
        let lengths: Vec<usize> = if rng.chance(20) {
            (0..3).map(|_| 1 + rng.below(3) as usize).collect()
        } else {
            (0..2).map(|_| 2 + rng.below(4) as usize).collect()
        };
        let threads = lengths
            .iter()
            .map(|&n| {
                (0..n)
                    .map(|_| op(&mut rng, &leaves, two_dirs, reads))
                    .collect()
            })
            .collect();
        let plan = Plan {
            seed,
            init: init.clone(),
            threads,
        };
        if plan.interleavings() <= MAX_INTERLEAVINGS {
            return plan;
        }
    }
}

fn op(rng: &mut Rng, leaves: &[Leaf], two_dirs: bool, reads: Reads) -> Op {
    let pick = |rng: &mut Rng| leaves[rng.below(leaves.len() as u64) as usize];
    let list_weight = match reads {
        Reads::LstatOnly => 0,
        Reads::LstatAndList => 7,
    };
    let weights = [16, 8, 8, 3, 9, 10, 6, 6, 5, 10, 5, 10, list_weight];
    match rng.weighted(&weights) {
        k @ 0..=3 => {
            let flags = [
                RenameFlags::empty(),
                RenameFlags::NOREPLACE,
                RenameFlags::EXCHANGE,
                RenameFlags::WHITEOUT,
            ][k];
            Op::Rename {
                from: pick(rng),
                to: pick(rng),
                flags,
            }
        }
        4 => Op::Link {
            from: pick(rng),
            to: pick(rng),
        },
        5 => Op::Unlink(pick(rng)),
        6 => Op::Rmdir(pick(rng)),
        7 => Op::Mkdir(pick(rng)),
        8 => Op::Symlink {
            target: LINK_TARGETS[rng.below(2) as usize],
            at: pick(rng),
        },
        9 => Op::CreateExcl(pick(rng)),
        10 => Op::Create(pick(rng)),
        11 => Op::Lstat(pick(rng)),
        _ => Op::List(if two_dirs { rng.below(2) as u8 } else { 0 }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleavings_is_the_multinomial_coefficient() {
        let leaf = Leaf { dir: 0, name: "x" };
        let plan = |lens: &[usize]| Plan {
            seed: 0,
            init: Vec::new(),
            threads: lens.iter().map(|&n| vec![Op::Lstat(leaf); n]).collect(),
        };
        assert_eq!(plan(&[5, 5]).interleavings(), 252);
        assert_eq!(plan(&[2, 3]).interleavings(), 10);
        assert_eq!(plan(&[3, 3, 2]).interleavings(), 560);
        assert_eq!(plan(&[3, 2, 2]).interleavings(), 210);
        assert_eq!(plan(&[1, 1, 1]).interleavings(), 6);
    }

    #[test]
    fn a_seed_generates_the_same_plan() {
        for seed in 0..50 {
            let a = generate(seed, Reads::LstatAndList);
            let b = generate(seed, Reads::LstatAndList);
            assert_eq!(a.to_string(), b.to_string());
            assert!(a.interleavings() <= MAX_INTERLEAVINGS);
            assert!(a.threads.len() >= 2 && a.threads.iter().all(|t| !t.is_empty()));
        }
    }
}
