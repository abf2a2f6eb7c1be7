//! Credential ops (CASES.md, "Credentials"): the `set*id` family, `setfsuid`/`setfsgid`,
//! `setgroups`/`getgroups`, `getresuid`/`getresgid`, `capget`/`capset`, and `capdrop`/
//! `capraise`, which change single capabilities with a `capget` and a `capset`. One
//! [`CredOp`] is one op line; [`CredOp::parse`] reads it and its `Display` writes it back.
//! [`CredValue`] is what the getters return.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::args::value;
use crate::lex::Token;

/// `linux/capability.h`'s names, indexed by capability number (`CAP_LAST_CAP` is 40).
pub const CAP_NAMES: [&str; 41] = [
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_DAC_READ_SEARCH",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",
    "CAP_NET_RAW",
    "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",
    "CAP_SYS_MODULE",
    "CAP_SYS_RAWIO",
    "CAP_SYS_CHROOT",
    "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",
    "CAP_SYS_ADMIN",
    "CAP_SYS_BOOT",
    "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG",
    "CAP_MKNOD",
    "CAP_LEASE",
    "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",
    "CAP_SETFCAP",
    "CAP_MAC_OVERRIDE",
    "CAP_MAC_ADMIN",
    "CAP_SYSLOG",
    "CAP_WAKE_ALARM",
    "CAP_BLOCK_SUSPEND",
    "CAP_AUDIT_READ",
    "CAP_PERFMON",
    "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE",
];

/// Every capability bit (`CAP_VALID_MASK`): what `all` stands for in a set.
pub const CAP_VALID_MASK: u64 = (1 << CAP_NAMES.len()) - 1;

/// `_LINUX_CAPABILITY_VERSION_3`, the `capget`/`capset` header version both sides use.
pub const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// The number of capability `name` (`CAP_CHOWN` or a plain number).
pub fn cap_number(name: &str) -> Option<u32> {
    CAP_NAMES
        .iter()
        .position(|n| *n == name)
        .map(|i| i as u32)
        .or_else(|| name.parse().ok())
}

/// Which capability sets `capdrop`/`capraise` change: any of `e`, `p`, `i`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CapWhich {
    /// The effective set.
    pub effective: bool,
    /// The permitted set.
    pub permitted: bool,
    /// The inheritable set.
    pub inheritable: bool,
}

impl CapWhich {
    /// Effective and permitted: what `capdrop` changes by default.
    pub const EP: CapWhich = CapWhich {
        effective: true,
        permitted: true,
        inheritable: false,
    };

    fn parse(w: &str) -> Result<CapWhich, String> {
        let mut c = CapWhich::default();
        for ch in w.chars() {
            match ch {
                'e' => c.effective = true,
                'p' => c.permitted = true,
                'i' => c.inheritable = true,
                _ => return Err(format!("capability sets `{w}` must be letters of `epi`")),
            }
        }
        if w.is_empty() {
            return Err("capability sets must name at least one of `epi`".into());
        }
        Ok(c)
    }
}

impl fmt::Display for CapWhich {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (on, c) in [
            (self.effective, 'e'),
            (self.permitted, 'p'),
            (self.inheritable, 'i'),
        ] {
            if on {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

/// The three sets of `capget`/`capset`, as 64-bit masks (bit `n` is capability `n`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapMasks {
    /// The effective set.
    pub effective: u64,
    /// The permitted set.
    pub permitted: u64,
    /// The inheritable set.
    pub inheritable: u64,
}

impl CapMasks {
    /// These sets with capability `cap` removed from (`raise == false`) or added to the sets
    /// `which` names: what `capdrop`/`capraise` pass to `capset`.
    pub fn changed(self, cap: u32, which: CapWhich, raise: bool) -> CapMasks {
        let bit = 1u64.checked_shl(cap).unwrap_or(0);
        let apply = |set: u64, on: bool| match (on, raise) {
            (false, _) => set,
            (true, true) => set | bit,
            (true, false) => set & !bit,
        };
        CapMasks {
            effective: apply(self.effective, which.effective),
            permitted: apply(self.permitted, which.permitted),
            inheritable: apply(self.inheritable, which.inheritable),
        }
    }
}

/// One credential op. Ids are `u32`, converted from the case's number as a C cast would, so
/// `-1` is `u32::MAX`: "unchanged" for `setres*id`/`setre*id`, invalid for the others.
#[allow(missing_docs)] // The fields are the arguments of the call the variant names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CredOp {
    /// `setresuid RUID EUID SUID`.
    Setresuid { ruid: u32, euid: u32, suid: u32 },
    /// `setresgid RGID EGID SGID`.
    Setresgid { rgid: u32, egid: u32, sgid: u32 },
    /// `setreuid RUID EUID`.
    Setreuid { ruid: u32, euid: u32 },
    /// `setregid RGID EGID`.
    Setregid { rgid: u32, egid: u32 },
    /// `setuid UID`.
    Setuid { uid: u32 },
    /// `setgid GID`.
    Setgid { gid: u32 },
    /// `setfsuid UID`: result the old fsuid.
    Setfsuid { uid: u32 },
    /// `setfsgid GID`: result the old fsgid.
    Setfsgid { gid: u32 },
    /// `getresuid`: result the real, effective and saved uids.
    Getresuid,
    /// `getresgid`: result the real, effective and saved gids.
    Getresgid,
    /// `setgroups GROUPS`.
    Setgroups { groups: Vec<u32> },
    /// `getgroups [SIZE]`: with SIZE 0 the count, else the groups.
    Getgroups { size: usize },
    /// `capget`: result the three sets.
    Capget,
    /// `capset EFFECTIVE PERMITTED INHERITABLE`.
    Capset(CapMasks),
    /// `capdrop CAP [SETS]` / `capraise CAP SETS`: `capget`, then `capset` with `cap` removed
    /// from or added to `which`.
    CapChange {
        cap: u32,
        which: CapWhich,
        raise: bool,
    },
}

/// Default SIZE of `getgroups`: room for `NGROUPS_MAX` groups.
const GETGROUPS_DEFAULT: usize = 65536;
/// A `setgroups` list longer than this prints as `count:N` when it is `1,2,...,N`.
const SHORT_LIST: usize = 16;

fn id(t: &Token) -> Result<u32, String> {
    Ok(value(&t.text())? as u32)
}

/// A capability set: `TERM|TERM...`, each `all`, a `CAP_*` name or a number (a mask).
fn cap_set(t: &Token) -> Result<u64, String> {
    let w = t.text();
    let mut acc = 0u64;
    for part in w.split('|') {
        acc |= if part == "all" {
            CAP_VALID_MASK
        } else if let Some(n) = CAP_NAMES.iter().position(|n| *n == part) {
            1 << n
        } else {
            value(part)? as u64
        };
    }
    Ok(acc)
}

/// A group list: `-` (none), `count:N` (1 to N) or `G,G,...`.
fn groups(t: &Token) -> Result<Vec<u32>, String> {
    let w = t.text();
    if w == "-" {
        return Ok(Vec::new());
    }
    if let Some(n) = w.strip_prefix("count:") {
        let n: u32 = n.parse().map_err(|_| format!("bad count in `{w}`"))?;
        return Ok((1..=n).collect());
    }
    w.split(',').map(|g| value(g).map(|v| v as u32)).collect()
}

fn cap(t: &Token) -> Result<u32, String> {
    let w = t.text();
    cap_number(&w).ok_or_else(|| format!("`{w}` is not a capability name or number"))
}

/// The op words [`CredOp::parse`] reads.
const WORDS: [&str; 16] = [
    "setresuid",
    "setresgid",
    "setreuid",
    "setregid",
    "setuid",
    "setgid",
    "setfsuid",
    "setfsgid",
    "getresuid",
    "getresgid",
    "setgroups",
    "getgroups",
    "capget",
    "capset",
    "capdrop",
    "capraise",
];

fn arity(args: &[Token], min: usize, max: usize) -> Result<(), String> {
    if args.len() < min {
        Err("missing argument".to_string())
    } else if args.len() > max {
        Err(format!("unexpected argument `{}`", args[max].text()))
    } else {
        Ok(())
    }
}

impl CredOp {
    /// Parses `word args...` if `word` is a credential op; `None` for any other word.
    ///
    /// # Errors
    /// A message for a missing, extra or malformed argument.
    pub fn parse(word: &str, args: &[Token]) -> Option<Result<CredOp, String>> {
        WORDS.contains(&word).then(|| Self::parse_known(word, args))
    }

    fn parse_known(word: &str, a: &[Token]) -> Result<CredOp, String> {
        let (min, max) = match word {
            "setresuid" | "setresgid" | "capset" => (3, 3),
            "setreuid" | "setregid" | "capraise" => (2, 2),
            "capdrop" => (1, 2),
            "getgroups" => (0, 1),
            "getresuid" | "getresgid" | "capget" => (0, 0),
            _ => (1, 1),
        };
        arity(a, min, max)?;
        Ok(match word {
            "setresuid" => CredOp::Setresuid {
                ruid: id(&a[0])?,
                euid: id(&a[1])?,
                suid: id(&a[2])?,
            },
            "setresgid" => CredOp::Setresgid {
                rgid: id(&a[0])?,
                egid: id(&a[1])?,
                sgid: id(&a[2])?,
            },
            "setreuid" => CredOp::Setreuid {
                ruid: id(&a[0])?,
                euid: id(&a[1])?,
            },
            "setregid" => CredOp::Setregid {
                rgid: id(&a[0])?,
                egid: id(&a[1])?,
            },
            "setuid" => CredOp::Setuid { uid: id(&a[0])? },
            "setgid" => CredOp::Setgid { gid: id(&a[0])? },
            "setfsuid" => CredOp::Setfsuid { uid: id(&a[0])? },
            "setfsgid" => CredOp::Setfsgid { gid: id(&a[0])? },
            "getresuid" => CredOp::Getresuid,
            "getresgid" => CredOp::Getresgid,
            "setgroups" => CredOp::Setgroups {
                groups: groups(&a[0])?,
            },
            "getgroups" => CredOp::Getgroups {
                size: match a.first() {
                    None => GETGROUPS_DEFAULT,
                    Some(t) => {
                        let v = value(&t.text())?;
                        usize::try_from(v).map_err(|_| format!("count {v} is negative"))?
                    }
                },
            },
            "capget" => CredOp::Capget,
            "capset" => CredOp::Capset(CapMasks {
                effective: cap_set(&a[0])?,
                permitted: cap_set(&a[1])?,
                inheritable: cap_set(&a[2])?,
            }),
            "capdrop" => CredOp::CapChange {
                cap: cap(&a[0])?,
                which: match a.get(1) {
                    None => CapWhich::EP,
                    Some(t) => CapWhich::parse(&t.text())?,
                },
                raise: false,
            },
            "capraise" => CredOp::CapChange {
                cap: cap(&a[0])?,
                which: CapWhich::parse(&a[1].text())?,
                raise: true,
            },
            _ => unreachable!("parse() only passes the words of WORDS"),
        })
    }
}

/// An id as a case writes it: `-1` for `(uid_t)-1`.
struct IdArg(u32);

impl fmt::Display for IdArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == u32::MAX {
            f.write_str("-1")
        } else {
            write!(f, "{}", self.0)
        }
    }
}

/// A capability number as a case writes it: its name when it has one.
struct CapArg(u32);

impl fmt::Display for CapArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match CAP_NAMES.get(self.0 as usize) {
            Some(n) => f.write_str(n),
            None => write!(f, "{}", self.0),
        }
    }
}

/// Writes the op line that [`CredOp::parse`] reads back to the same op.
impl fmt::Display for CredOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CredOp::Setresuid { ruid, euid, suid } => write!(
                f,
                "setresuid {} {} {}",
                IdArg(*ruid),
                IdArg(*euid),
                IdArg(*suid)
            ),
            CredOp::Setresgid { rgid, egid, sgid } => write!(
                f,
                "setresgid {} {} {}",
                IdArg(*rgid),
                IdArg(*egid),
                IdArg(*sgid)
            ),
            CredOp::Setreuid { ruid, euid } => {
                write!(f, "setreuid {} {}", IdArg(*ruid), IdArg(*euid))
            }
            CredOp::Setregid { rgid, egid } => {
                write!(f, "setregid {} {}", IdArg(*rgid), IdArg(*egid))
            }
            CredOp::Setuid { uid } => write!(f, "setuid {}", IdArg(*uid)),
            CredOp::Setgid { gid } => write!(f, "setgid {}", IdArg(*gid)),
            CredOp::Setfsuid { uid } => write!(f, "setfsuid {}", IdArg(*uid)),
            CredOp::Setfsgid { gid } => write!(f, "setfsgid {}", IdArg(*gid)),
            CredOp::Getresuid => f.write_str("getresuid"),
            CredOp::Getresgid => f.write_str("getresgid"),
            CredOp::Setgroups { groups } => {
                f.write_str("setgroups ")?;
                let counted =
                    groups.len() > SHORT_LIST && groups.iter().zip(1u32..).all(|(g, i)| *g == i);
                if groups.is_empty() {
                    f.write_str("-")
                } else if counted {
                    write!(f, "count:{}", groups.len())
                } else {
                    let list: Vec<String> = groups.iter().map(|g| IdArg(*g).to_string()).collect();
                    f.write_str(&list.join(","))
                }
            }
            CredOp::Getgroups { size } => write!(f, "getgroups {size}"),
            CredOp::Capget => f.write_str("capget"),
            CredOp::Capset(m) => write!(
                f,
                "capset {:#x} {:#x} {:#x}",
                m.effective, m.permitted, m.inheritable
            ),
            CredOp::CapChange {
                cap,
                which,
                raise: false,
            } => write!(f, "capdrop {} {which}", CapArg(*cap)),
            CredOp::CapChange {
                cap,
                which,
                raise: true,
            } => write!(f, "capraise {} {which}", CapArg(*cap)),
        }
    }
}

/// What a credential getter returned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CredValue {
    /// `getresuid`/`getresgid`: real, effective, saved.
    Ids([u32; 3]),
    /// `getgroups`: the groups in the order the call gave them.
    Groups(Vec<u32>),
    /// `capget`: the three sets.
    Caps(CapMasks),
}

/// The normalised text of a result (CASES.md, "Normalisation"): ids and groups as numbers,
/// capability sets as hex masks.
impl fmt::Display for CredValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CredValue::Ids([r, e, s]) => write!(f, "ids {r} {e} {s}"),
            CredValue::Groups(g) => {
                let list: Vec<String> = g.iter().map(u32::to_string).collect();
                write!(f, "groups [{}]", list.join(", "))
            }
            CredValue::Caps(m) => write!(
                f,
                "caps effective={:#x} permitted={:#x} inheritable={:#x}",
                m.effective, m.permitted, m.inheritable
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lex::tokenize;

    fn op(line: &str) -> Option<Result<CredOp, String>> {
        let t = tokenize(line).expect("tokens");
        CredOp::parse(&t[0].text(), &t[1..])
    }

    #[test]
    fn every_op_prints_the_line_it_parses_from() {
        for line in [
            "setresuid -1 1000 0",
            "setresgid 1 2 -1",
            "setreuid 1000 -1",
            "setregid -1 7",
            "setuid 0",
            "setgid 4294967294",
            "setfsuid -1",
            "setfsgid 1000",
            "getresuid",
            "getresgid",
            "setgroups -",
            "setgroups 3,1,2",
            "setgroups count:65537",
            "getgroups 0",
            "capget",
            "capset 0x1 0x3 0x0",
            "capdrop CAP_DAC_READ_SEARCH ep",
            "capdrop 63 i",
            "capraise CAP_CHOWN ei",
        ] {
            let parsed = op(line).expect("a cred op").expect("parses");
            assert_eq!(parsed.to_string(), line);
        }
    }

    #[test]
    fn arguments_convert_as_c_casts_and_names_resolve() {
        assert_eq!(
            op("setresuid -1 0 1"),
            Some(Ok(CredOp::Setresuid {
                ruid: u32::MAX,
                euid: 0,
                suid: 1
            }))
        );
        assert_eq!(
            op("capset CAP_CHOWN|CAP_FOWNER all 0x1"),
            Some(Ok(CredOp::Capset(CapMasks {
                effective: 0b1001,
                permitted: CAP_VALID_MASK,
                inheritable: 1,
            })))
        );
        assert_eq!(
            op("capdrop CAP_FSETID"),
            Some(Ok(CredOp::CapChange {
                cap: 4,
                which: CapWhich::EP,
                raise: false
            }))
        );
        assert_eq!(op("open /a O_RDONLY"), None);
        assert!(matches!(op("setuid"), Some(Err(_))));
        assert!(matches!(op("setuid 1 2"), Some(Err(_))));
        assert!(matches!(op("capdrop CAP_BOGUS"), Some(Err(_))));
        assert!(matches!(op("capraise CAP_CHOWN x"), Some(Err(_))));
        assert!(matches!(op("getgroups -1"), Some(Err(_))));
    }

    #[test]
    fn capdrop_and_capraise_change_only_the_named_sets() {
        let m = CapMasks {
            effective: 0b111,
            permitted: 0b111,
            inheritable: 0,
        };
        let which = CapWhich::parse("ep").expect("valid");
        assert_eq!(
            m.changed(1, which, false),
            CapMasks {
                effective: 0b101,
                permitted: 0b101,
                inheritable: 0
            }
        );
        let inh = CapWhich::parse("i").expect("valid");
        assert_eq!(m.changed(2, inh, true).inheritable, 0b100);
        assert_eq!(m.changed(64, which, false), m, "no bit 64 to drop");
    }
}
