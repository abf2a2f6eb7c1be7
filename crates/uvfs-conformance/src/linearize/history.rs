//! A run's history in a form that compares across `Vfs`es: every operation's result and the
//! final tree, with inode identities replaced by labels.
//!
//! An inode of the initial tree is labelled by its position in `InitialInodes` (the same in
//! every run of a plan). Any other inode is labelled by its first appearance in a fixed walk
//! of the history (thread 0's results in program order, then thread 1's, ..., then the final
//! tree in listing order). Two histories then have equal labels exactly when one bijection
//! between their new inodes maps one onto the other: identities are compared up to renaming,
//! and which inode a result names still matters.

use std::collections::HashMap;
use std::fmt::Write as _;

use uvfs::abi::{Errno, FileType};

use super::exec::{Ident, InitialInodes, Raw, RawDirent, RawNode, RawResult};

/// An inode, named independently of its number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Label {
    /// The `n`th inode of the initial tree.
    Initial(u8),
    /// The `n`th other inode in the history's walk order.
    New(u8),
}

/// A directory entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Entry {
    /// The name.
    pub name: Vec<u8>,
    /// The inode (from `d_ino`).
    pub inode: Label,
    /// `d_type`.
    pub d_type: u8,
}

/// What an operation returned.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    /// Success without a value.
    Done,
    /// The inode an open or `lstat` reached, and its type.
    Node(Label, FileType),
    /// A directory's entries in `getdents64` order.
    Listing(Vec<Entry>),
}

/// One name of the final tree.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Node {
    /// The absolute path.
    pub path: String,
    /// The entry in the parent's listing.
    pub entry: Entry,
    /// `lstat`: inode, type, `st_nlink`.
    pub stat: Result<(Label, FileType, u64), Errno>,
    /// A symbolic link's body.
    pub target: Option<Result<Vec<u8>, Errno>>,
}

/// A run: each thread's results in program order, and the final tree (or why it could not be
/// read).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct History {
    /// `results[t][i]`: what thread `t`'s `i`th operation returned.
    pub results: Vec<Vec<Result<Value, Errno>>>,
    /// The final tree, depth first in listing order.
    pub state: Result<Vec<Node>, String>,
}

struct Labeler<'a> {
    initial: &'a InitialInodes,
    new: HashMap<Ident, u8>,
}

impl Labeler<'_> {
    fn label(&mut self, id: Ident) -> Label {
        if let Some(i) = self.initial.inodes.iter().position(|(x, _)| *x == id) {
            return Label::Initial(i as u8);
        }
        let next = self.new.len() as u8;
        Label::New(*self.new.entry(id).or_insert(next))
    }

    fn entry(&mut self, d: RawDirent) -> Entry {
        Entry {
            inode: self.label(d.ident),
            name: d.name,
            d_type: d.d_type,
        }
    }
}

impl History {
    /// Relabels a run's raw results and final tree.
    pub(crate) fn new(
        initial: &InitialInodes,
        results: Vec<Vec<RawResult>>,
        state: Result<Vec<RawNode>, String>,
    ) -> History {
        let mut l = Labeler {
            initial,
            new: HashMap::new(),
        };
        let results = results
            .into_iter()
            .map(|thread| {
                thread
                    .into_iter()
                    .map(|r| {
                        r.map(|v| match v {
                            Raw::Done => Value::Done,
                            Raw::Node(id, ft) => Value::Node(l.label(id), ft),
                            Raw::Listing(es) => {
                                Value::Listing(es.into_iter().map(|d| l.entry(d)).collect())
                            }
                        })
                    })
                    .collect()
            })
            .collect();
        let state = state.map(|nodes| {
            nodes
                .into_iter()
                .map(|n| Node {
                    path: n.path,
                    entry: l.entry(n.dirent),
                    stat: n.stat.map(|(id, ft, nlink)| (l.label(id), ft, nlink)),
                    target: n.target,
                })
                .collect()
        });
        History { results, state }
    }

    /// How many operation results `self` and `other` share, and whether the final trees are
    /// equal.
    pub fn agreement(&self, other: &History) -> (usize, bool) {
        let same = self
            .results
            .iter()
            .zip(&other.results)
            .flat_map(|(a, b)| a.iter().zip(b))
            .filter(|(a, b)| a == b)
            .count();
        (same, self.state == other.state)
    }
}

/// Renders labels, results and trees for a report; initial inodes are shown by their path in
/// the initial tree (`[/a/x]`), others as `#n`.
pub struct Render {
    names: Vec<String>,
}

impl Render {
    pub(crate) fn new(initial: &InitialInodes) -> Render {
        Render {
            names: initial.inodes.iter().map(|(_, n)| n.clone()).collect(),
        }
    }

    /// A label.
    pub fn label(&self, l: Label) -> String {
        match l {
            Label::Initial(i) => format!("[{}]", self.names[usize::from(i)]),
            Label::New(n) => format!("#{n}"),
        }
    }

    /// An operation's result.
    pub fn result(&self, r: &Result<Value, Errno>) -> String {
        match r {
            Err(e) => format!("{e:?}"),
            Ok(Value::Done) => "0".to_string(),
            Ok(Value::Node(l, ft)) => format!("inode {} {}", self.label(*l), kind(*ft)),
            Ok(Value::Listing(es)) => {
                let items: Vec<String> = es
                    .iter()
                    .map(|e| {
                        format!(
                            "{} {}",
                            String::from_utf8_lossy(&e.name),
                            self.label(e.inode)
                        )
                    })
                    .collect();
                format!("[{}]", items.join(", "))
            }
        }
    }

    /// The final tree, one name a line.
    pub fn state(&self, s: &Result<Vec<Node>, String>) -> String {
        let nodes = match s {
            Err(e) => return format!("    (unreadable: {e})\n"),
            Ok(n) => n,
        };
        let mut out = String::new();
        for n in nodes {
            let _ = write!(out, "    {:<8} d_ino {}", n.path, self.label(n.entry.inode));
            match &n.stat {
                Ok((l, ft, nlink)) => {
                    let _ = write!(
                        out,
                        ", lstat {} {} nlink {nlink}",
                        self.label(*l),
                        kind(*ft)
                    );
                }
                Err(e) => {
                    let _ = write!(out, ", lstat {e:?}");
                }
            }
            if let Some(t) = &n.target {
                match t {
                    Ok(t) => {
                        let _ = write!(out, " -> \"{}\"", String::from_utf8_lossy(t));
                    }
                    Err(e) => {
                        let _ = write!(out, " readlink {e:?}");
                    }
                }
            }
            out.push('\n');
        }
        out
    }
}

fn kind(ft: FileType) -> &'static str {
    match ft {
        FileType::Regular => "file",
        FileType::Directory => "dir",
        FileType::Symlink => "symlink",
        FileType::CharDevice => "chardev",
        FileType::BlockDevice => "blockdev",
        FileType::Fifo => "fifo",
        FileType::Socket => "socket",
        FileType::Anon => "anon",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn initial() -> InitialInodes {
        InitialInodes {
            inodes: vec![((1, 1), "/".to_string()), ((1, 2), "/a".to_string())],
        }
    }

    fn node(path: &str, id: Ident) -> RawNode {
        RawNode {
            path: path.to_string(),
            dirent: RawDirent {
                name: path.rsplit('/').next().unwrap_or_default().into(),
                ident: id,
                d_type: 8,
            },
            stat: Ok((id, FileType::Regular, 1)),
            target: None,
        }
    }

    /// Thread 0 created an inode, thread 1 saw one, the tree holds one at `/a/x`.
    fn history(created: Ident, seen: Ident, in_tree: Ident) -> History {
        History::new(
            &initial(),
            vec![
                vec![Ok(Raw::Node(created, FileType::Regular))],
                vec![Ok(Raw::Node(seen, FileType::Regular))],
            ],
            Ok(vec![node("/a/x", in_tree)]),
        )
    }

    #[test]
    fn new_inodes_compare_up_to_renaming() {
        assert_eq!(
            history((1, 7), (1, 7), (1, 7)),
            history((1, 9), (1, 9), (1, 9))
        );
        assert_eq!(
            history((1, 7), (1, 8), (1, 8)),
            history((1, 30), (1, 20), (1, 20))
        );
    }

    #[test]
    fn which_inode_a_result_names_still_matters() {
        // The same inode twice is not two different inodes.
        assert_ne!(
            history((1, 7), (1, 7), (1, 7)),
            history((1, 7), (1, 8), (1, 7))
        );
        // A new inode is not an initial one, and the device counts.
        assert_ne!(
            history((1, 7), (1, 7), (1, 7)),
            history((1, 2), (1, 2), (1, 2))
        );
        assert_ne!(
            history((1, 7), (1, 7), (1, 7)),
            history((1, 7), (2, 7), (1, 7))
        );
    }
}
