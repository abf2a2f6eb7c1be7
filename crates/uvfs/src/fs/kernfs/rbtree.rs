//! A kernfs directory's children, in Linux's red-black tree (`kernfs_node`'s
//! `dir.children`, an `rb_root` ordered by `kernfs_sd_compare()`: hash, then name).
//!
//! The tree is the directory's one map: lookups descend it and listings walk it in order.
//! Its shape matters where Linux's answer depends on it: a listing resumed from a position
//! that is no entry's hash starts at the last node that a search of the tree by hash visits
//! (`kernfs_dir_pos()`), which may be the entry before the position or the one after it. The
//! shape follows from the order of inserts and removals, so the tree is kept with the classic
//! red-black insert and erase (rebalancing as lib/rbtree.c's `__rb_insert()` and
//! `__rb_erase_augmented()` + `____rb_erase_color()` do: a removed node with two children is
//! replaced by its successor, which takes its colour).
//!
//! Nodes live in an arena (`Vec`), linked by index; [`NIL`] is no node.

use super::node::Key;

const NIL: u32 = u32::MAX;

struct RbNode<V> {
    /// `None` for a slot a removal freed.
    entry: Option<(Key, V)>,
    parent: u32,
    left: u32,
    right: u32,
    red: bool,
}

/// A red-black tree of keys and their values (see the module docs).
pub(crate) struct Tree<V> {
    nodes: Vec<RbNode<V>>,
    /// Slots of `nodes` that removals freed.
    free: Vec<u32>,
    root: Option<u32>,
}

impl<V> Default for Tree<V> {
    fn default() -> Self {
        Tree {
            nodes: Vec::new(),
            free: Vec::new(),
            root: None,
        }
    }
}

impl<V> Tree<V> {
    fn n(&self, i: u32) -> &RbNode<V> {
        &self.nodes[i as usize]
    }

    fn n_mut(&mut self, i: u32) -> &mut RbNode<V> {
        &mut self.nodes[i as usize]
    }

    /// The key of the live node `i`.
    fn key(&self, i: u32) -> &Key {
        &self.n(i).entry.as_ref().expect("a live node").0
    }

    fn is_red(&self, i: u32) -> bool {
        i != NIL && self.n(i).red
    }

    fn root_or_nil(&self) -> u32 {
        self.root.unwrap_or(NIL)
    }

    /// Makes `new` take `old`'s place under `old`'s parent (or as the root).
    fn replace_child(&mut self, old: u32, new: u32, parent: u32) {
        if parent == NIL {
            self.root = (new != NIL).then_some(new);
        } else if self.n(parent).left == old {
            self.n_mut(parent).left = new;
        } else {
            self.n_mut(parent).right = new;
        }
        if new != NIL {
            self.n_mut(new).parent = parent;
        }
    }

    /// `i`'s left child (`left`) or right child.
    fn child(&self, i: u32, left: bool) -> u32 {
        let n = self.n(i);
        if left {
            n.left
        } else {
            n.right
        }
    }

    fn set_child(&mut self, i: u32, left: bool, c: u32) {
        let n = self.n_mut(i);
        if left {
            n.left = c;
        } else {
            n.right = c;
        }
    }

    /// Rotates `x` down to its left (`left`) or right: its child on the other side takes
    /// its place, and that child's inner subtree becomes `x`'s.
    fn rotate(&mut self, x: u32, left: bool) {
        let y = self.child(x, !left);
        let parent = self.n(x).parent;
        let inner = self.child(y, left);
        self.set_child(x, !left, inner);
        if inner != NIL {
            self.n_mut(inner).parent = x;
        }
        self.replace_child(x, y, parent);
        self.set_child(y, left, x);
        self.n_mut(x).parent = y;
    }

    /// Adds `key` with `value`, or gives `value` back if the key is there (Linux:
    /// `kernfs_link_sibling()`'s descent, then `rb_insert_color()`).
    pub(crate) fn insert(&mut self, key: Key, value: V) -> Result<(), V> {
        let mut parent = NIL;
        let mut cur = self.root_or_nil();
        let mut left = false;
        while cur != NIL {
            parent = cur;
            match key.cmp(self.key(cur)) {
                std::cmp::Ordering::Less => left = true,
                std::cmp::Ordering::Greater => left = false,
                std::cmp::Ordering::Equal => return Err(value),
            }
            cur = self.child(cur, left);
        }
        let node = RbNode {
            entry: Some((key, value)),
            parent,
            left: NIL,
            right: NIL,
            red: true,
        };
        let z = match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                u32::try_from(self.nodes.len() - 1).expect("fewer than 2^32 children")
            }
        };
        if parent == NIL {
            self.root = Some(z);
        } else {
            self.set_child(parent, left, z);
        }
        self.insert_fixup(z);
        Ok(())
    }

    fn insert_fixup(&mut self, mut z: u32) {
        loop {
            let p = self.n(z).parent;
            if p == NIL {
                self.n_mut(z).red = false;
                return;
            }
            if !self.n(p).red {
                return;
            }
            // A red parent is not the root, so the grandparent exists.
            let g = self.n(p).parent;
            let p_is_left = self.n(g).left == p;
            let uncle = self.child(g, !p_is_left);
            if self.is_red(uncle) {
                // Colour flips; the grandparent may now break the rule above it.
                self.n_mut(p).red = false;
                self.n_mut(uncle).red = false;
                self.n_mut(g).red = true;
                z = g;
                continue;
            }
            // The uncle is black: one or two rotations end it.
            let mut p = p;
            if self.child(p, !p_is_left) == z {
                self.rotate(p, p_is_left);
                p = z;
            }
            self.n_mut(p).red = false;
            self.n_mut(g).red = true;
            self.rotate(g, !p_is_left);
            return;
        }
    }

    fn find(&self, key: &Key) -> u32 {
        let mut cur = self.root_or_nil();
        while cur != NIL {
            match key.cmp(self.key(cur)) {
                std::cmp::Ordering::Less => cur = self.n(cur).left,
                std::cmp::Ordering::Greater => cur = self.n(cur).right,
                std::cmp::Ordering::Equal => return cur,
            }
        }
        NIL
    }

    /// The value of `key`.
    pub(crate) fn get(&self, key: &Key) -> Option<&V> {
        match self.find(key) {
            NIL => None,
            i => self.n(i).entry.as_ref().map(|e| &e.1),
        }
    }

    /// Removes `key` and gives its value back (Linux: `rb_erase()` in
    /// `kernfs_unlink_sibling()`).
    pub(crate) fn remove(&mut self, key: &Key) -> Option<V> {
        let z = self.find(key);
        if z == NIL {
            return None;
        }
        let (zl, zr, zp, z_red) = {
            let n = self.n(z);
            (n.left, n.right, n.parent, n.red)
        };
        // `rebalance`: the parent under which one black node is now missing, if any.
        let rebalance = if zl == NIL || zr == NIL {
            // At most one child, which is then red under a black node: it takes the node's
            // place, black.
            let child = if zl == NIL { zr } else { zl };
            self.replace_child(z, child, zp);
            self.gap(child, z_red, zp)
        } else {
            // Two children: the successor (leftmost of the right subtree) takes the node's
            // place and colour; its own right child, if any, takes the successor's place.
            let mut s = zr;
            while self.n(s).left != NIL {
                s = self.n(s).left;
            }
            let s_red = self.n(s).red;
            let s_right = self.n(s).right;
            let parent_of_gap = if s == zr {
                s
            } else {
                let sp = self.n(s).parent;
                self.n_mut(sp).left = s_right;
                if s_right != NIL {
                    self.n_mut(s_right).parent = sp;
                }
                self.n_mut(s).right = zr;
                self.n_mut(zr).parent = s;
                sp
            };
            self.n_mut(s).left = zl;
            self.n_mut(zl).parent = s;
            self.replace_child(z, s, zp);
            self.n_mut(s).red = z_red;
            self.gap(s_right, s_red, parent_of_gap)
        };
        let entry = self.nodes[z as usize].entry.take();
        self.free.push(z);
        if rebalance != NIL {
            self.erase_fixup(rebalance);
        }
        entry.map(|e| e.1)
    }

    /// Where a removal left one black node missing: nowhere if a (red) child moved up into
    /// the place that emptied (it turns black) or the node that left it was red, else under
    /// `parent`.
    fn gap(&mut self, moved: u32, left_red: bool, parent: u32) -> u32 {
        if moved != NIL {
            self.n_mut(moved).red = false;
            NIL
        } else if left_red {
            NIL
        } else {
            parent
        }
    }

    /// Restores the black heights after a black node left a gap (`node`, possibly none)
    /// below `parent` (Linux: `____rb_erase_color()`).
    fn erase_fixup(&mut self, mut parent: u32) {
        let mut node = NIL;
        loop {
            if node != NIL && self.n(node).red {
                self.n_mut(node).red = false;
                return;
            }
            if parent == NIL {
                // The gap reached the root: every path lost one black node alike.
                if node != NIL {
                    self.n_mut(node).red = false;
                }
                return;
            }
            // The gap is on this side of `parent`; its sibling subtree is one black node
            // deeper, so the sibling exists.
            let left = self.n(parent).left == node;
            let mut w = self.child(parent, !left);
            if self.is_red(w) {
                self.n_mut(w).red = false;
                self.n_mut(parent).red = true;
                self.rotate(parent, left);
                w = self.child(parent, !left);
            }
            let (near, far) = (self.child(w, left), self.child(w, !left));
            if !self.is_red(near) && !self.is_red(far) {
                self.n_mut(w).red = true;
                node = parent;
                parent = self.n(node).parent;
                continue;
            }
            if !self.is_red(far) {
                self.n_mut(near).red = false;
                self.n_mut(w).red = true;
                self.rotate(w, !left);
                w = self.child(parent, !left);
            }
            self.n_mut(w).red = self.n(parent).red;
            self.n_mut(parent).red = false;
            let far = self.child(w, !left);
            self.n_mut(far).red = false;
            self.rotate(parent, left);
            return;
        }
    }

    /// The node where a search by `hash` alone ends (Linux: the descent in
    /// `kernfs_dir_pos()`): a node with that hash, or else the last node visited, which holds
    /// the hash just below or just above it. `NIL` for an empty tree.
    fn search_end(&self, hash: u32) -> u32 {
        let mut cur = self.root_or_nil();
        while cur != NIL {
            let n = self.n(cur);
            let next = match hash.cmp(&self.key(cur).0) {
                std::cmp::Ordering::Less => n.left,
                std::cmp::Ordering::Greater => n.right,
                std::cmp::Ordering::Equal => return cur,
            };
            if next == NIL {
                return cur;
            }
            cur = next;
        }
        NIL
    }

    /// The node after `i` in order (Linux: `rb_next()`).
    fn next(&self, i: u32) -> u32 {
        let right = self.n(i).right;
        if right != NIL {
            let mut c = right;
            while self.n(c).left != NIL {
                c = self.n(c).left;
            }
            return c;
        }
        let mut c = i;
        let mut p = self.n(i).parent;
        while p != NIL && self.n(p).right == c {
            c = p;
            p = self.n(p).parent;
        }
        p
    }

    /// The entries in order from node `i` on.
    fn iter_from(&self, i: u32) -> impl Iterator<Item = (&Key, &V)> {
        std::iter::successors((i != NIL).then_some(i), move |&i| {
            Some(self.next(i)).filter(|&n| n != NIL)
        })
        .filter_map(move |i| self.n(i).entry.as_ref().map(|(k, v)| (k, v)))
    }

    /// Every entry, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&Key, &V)> {
        let mut first = self.root_or_nil();
        while first != NIL && self.n(first).left != NIL {
            first = self.n(first).left;
        }
        self.iter_from(first)
    }

    /// The entries, in order, from where a listing resumed at position `hash` starts:
    /// the entry with that hash, or else the last one a search by hash visits, which may come
    /// before `hash` (Linux: `kernfs_dir_pos()`, then `rb_next()`).
    pub(crate) fn resume_at(&self, hash: u32) -> impl Iterator<Item = (&Key, &V)> {
        self.iter_from(self.search_end(hash))
    }

    /// Checks the red-black rules and the order, returning the keys in order (tests).
    #[cfg(test)]
    fn check(&self) -> Vec<Key> {
        fn walk<V>(t: &Tree<V>, i: u32, parent: u32, out: &mut Vec<Key>) -> usize {
            if i == NIL {
                return 1;
            }
            let n = t.n(i);
            assert_eq!(n.parent, parent, "parent link");
            if n.red {
                assert!(!t.is_red(n.left) && !t.is_red(n.right), "red under red");
            }
            let l = walk(t, n.left, i, out);
            out.push(t.key(i).clone());
            let r = walk(t, n.right, i, out);
            assert_eq!(l, r, "black heights");
            l + usize::from(!n.red)
        }
        let mut out = Vec::new();
        if let Some(r) = self.root {
            assert!(!self.n(r).red, "red root");
            walk(self, r, NIL, &mut out);
        }
        assert!(out.windows(2).all(|w| w[0] < w[1]), "in order");
        let listed: Vec<Key> = self.iter().map(|(k, _)| k.clone()).collect();
        assert_eq!(listed, out, "iteration follows the order");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn key(h: u32) -> Key {
        (h, format!("n{h}").into_bytes().into_boxed_slice())
    }

    /// Inserts and removals in a fixed pseudo-random order keep the red-black rules and hold
    /// the same keys as a set (naive oracle); a search by hash ends at the key itself when
    /// present, else at the key just below or just above it. Fails with a rotation or a
    /// recolouring dropped from either fixup (rules broken) or a removal that loses a
    /// subtree (keys missing).
    #[test]
    fn inserts_and_removals_keep_the_rules_and_the_keys() {
        let mut t: Tree<u32> = Tree::default();
        let mut model = BTreeSet::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut checks = 0;
        for step in 0..4000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let h = (x % 300) as u32 + 2;
            let k = key(h);
            if model.contains(&k) && (step % 3 != 0 || model.len() > 150) {
                assert_eq!(t.remove(&k), Some(h), "removal gives the value back");
                model.remove(&k);
                assert_eq!(t.get(&k), None);
            } else if !model.contains(&k) {
                t.insert(k.clone(), h).expect("a new key");
                model.insert(k.clone());
                assert_eq!(t.get(&k), Some(&h));
            } else {
                assert_eq!(t.insert(k, h), Err(h), "a key inserted twice");
            }
            let keys = t.check();
            assert_eq!(keys, model.iter().cloned().collect::<Vec<_>>());
            let probe = (x >> 20) as u32 % 310;
            match t.resume_at(probe).next().map(|(k, _)| k) {
                None => assert!(model.is_empty()),
                Some(found) => {
                    let below = model.range(..(probe, Box::default())).next_back();
                    let above = model.range((probe, Box::<[u8]>::default())..).next();
                    assert!(
                        Some(found) == below || Some(found) == above,
                        "{probe}: {found:?}"
                    );
                }
            }
            checks += 1;
        }
        assert_eq!(checks, 4000);
        assert!(model.len() > 20, "the tree grew: {}", model.len());
    }

    /// The shape after known inserts: keys 1..=7 inserted in order make the tree CLRS's
    /// and Linux's insert gives (root 2; 1 and 4 below it; 3 and 6 below 4; 5 and 7 below
    /// 6), checked through the searches that end between keys.
    #[test]
    fn ascending_inserts_rotate_as_linux_does() {
        let mut t: Tree<u32> = Tree::default();
        for h in [10, 20, 30, 40, 50, 60, 70] {
            t.insert(key(h), h).expect("a new key");
        }
        t.check();
        let end = |h| t.resume_at(h).next().map(|(k, _)| k.0);
        // 20 is the root; 25 goes right to 40, then left to 30: ends at 30 (above 25).
        assert_eq!(end(25), Some(30));
        // 35: 20 -> 40 -> 30, no right child: ends at 30 (below 35).
        assert_eq!(end(35), Some(30));
        // 45: 20 -> 40 -> 60 -> 50: ends at 50 (above). 15: 20 -> 10: ends at 10 (below).
        assert_eq!(end(45), Some(50));
        assert_eq!(end(15), Some(10));
        // A listing resumed at 35 goes on in order from there.
        let rest: Vec<u32> = t.resume_at(35).map(|(_, v)| *v).collect();
        assert_eq!(rest, [30, 40, 50, 60, 70]);
    }
}
