//! TensorSSA conversion (the paper's Algorithm 1): removes every view and
//! mutation from an imperative graph.
//!
//! Requires a graph from the frontend (values defined once; views as
//! `View` nodes; in-place updates as `Mutate` nodes whose target is a
//! view or a storage owner). Guarantees a graph with neither: what
//! remains is pure operations, Access and Assign (each a comprehension)
//! and loop and branch regions whose carried values and outputs now
//! include every tensor their bodies updated. Program order is kept.
//!
//! The steps are the paper's. *Alias analysis* takes the view edges
//! (memory dependencies; each view has one base, so aliasing is "must").
//! *Rewrite mutation* replaces each `Mutate(v, w)`: the new value of `v` is
//! computed purely; *pass-up* inserts `x' = Assign(x, v', [·])` along the
//! view path from `v` to its storage owner `t`; *pass-down* (`Traversal`)
//! inserts `Update(t', t)` and, for every view of the tree that dominates
//! the mutation, `v' = Access(x', [·])` and `Update(v', v)`. *Block
//! propagation* carries each Update out of the regions between it and the
//! block its value is defined in: the region returns the value, gets a new
//! output with an Update after it, and a loop also takes it as a carried
//! parameter with an Update at the start of its body. *Renaming* then
//! replaces each use of `x` after `Update(x', x)` by `x'` and removes the
//! Updates, and dead code elimination removes what no result needs.
//! Views that nothing mutates through are Accesses too: once nothing is
//! mutated, reading through a view and reading a copy agree.

use std::collections::{HashMap, HashSet};

use crate::graph::{BlockId, Elem, Graph, Mutation, NodeId, Op, Origin, Span, ValueId, View, ROOT};

/// One mutation the conversion removed, for `tessera functionalize`.
#[derive(Clone, Debug, PartialEq)]
pub struct Removed {
    pub span: Span,
    /// What replaced it: how many Assigns (the view path up to the owner)
    /// and Accesses (the views brought up to date).
    pub assigns: usize,
    pub accesses: usize,
}

/// Converts `g` in place; returns the mutations it removed, in order.
pub fn convert(g: &mut Graph) -> Vec<Removed> {
    let removed = rewrite_mutations(g);
    block_propagation(g);
    rename(g);
    views_to_accesses(g);
    dce(g);
    removed
}

/// The view edge that defines `v`: its base and the view node.
fn view_parent(g: &Graph, v: ValueId) -> Option<(ValueId, NodeId)> {
    match g.values[v].origin {
        Origin::Node(n, _) => match g.nodes[n].op {
            Op::View(_) => Some((g.nodes[n].inputs[0], n)),
            _ => None,
        },
        Origin::Param(..) => None,
    }
}

/// Every node in program order (a pre-order walk: a region's node before
/// its blocks' nodes).
fn program_order(g: &Graph) -> Vec<NodeId> {
    fn walk(g: &Graph, b: BlockId, out: &mut Vec<NodeId>) {
        for &n in &g.blocks[b].nodes {
            out.push(n);
            for &inner in &g.nodes[n].blocks {
                walk(g, inner, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(g, ROOT, &mut out);
    out
}

/// Each node's position in its block.
fn positions(g: &Graph) -> HashMap<NodeId, usize> {
    g.blocks
        .iter()
        .flat_map(|b| b.nodes.iter().enumerate().map(|(i, &n)| (n, i)))
        .collect()
}

/// Whether node `a` dominates node `b`: `a` is in a block enclosing `b`'s
/// (or the same) and comes before the node of that block that holds `b`.
/// `at` gives each node's position in its block; nodes inserted since
/// keep the others' relative order, so positions computed once answer for
/// the nodes that were there.
fn dominates(g: &Graph, at: &HashMap<NodeId, usize>, a: NodeId, b: NodeId) -> bool {
    let ab = g.nodes[a].block;
    let mut holder = b;
    loop {
        let blk = g.nodes[holder].block;
        if blk == ab {
            return matches!((at.get(&a), at.get(&holder)), (Some(x), Some(y)) if x < y);
        }
        match g.blocks[blk].owner {
            Some(owner) => holder = owner,
            None => return false,
        }
    }
}

fn rewrite_mutations(g: &mut Graph) -> Vec<Removed> {
    // The alias trees: each view's children, by base.
    let mut children: HashMap<ValueId, Vec<(ValueId, NodeId)>> = HashMap::new();
    for n in program_order(g) {
        if let Op::View(_) = g.nodes[n].op {
            children
                .entry(g.nodes[n].inputs[0])
                .or_default()
                .push((g.nodes[n].outputs[0], n));
        }
    }
    let order = positions(g);
    let live = Liveness::of(g, &children);
    let mut removed = Vec::new();
    // Each mutation's replacement nodes, spliced in after the walk (one
    // rebuild per block, not a search and a splice per mutation).
    let mut replacing: HashMap<NodeId, Vec<NodeId>> = HashMap::new();
    for n in program_order(g) {
        let Op::Mutate(m) = g.nodes[n].op.clone() else {
            continue;
        };
        let block = g.nodes[n].block;
        let span = g.nodes[n].span;
        let mut inserted: Vec<NodeId> = Vec::new();
        let target = g.nodes[n].inputs[0];
        let args: Vec<ValueId> = g.nodes[n].inputs[1..].to_vec();
        // The target's new value, computed without mutation.
        let ty = g.ty(target).clone();
        let (op, inputs) = match m {
            Mutation::Copy => (Op::Elem(Elem::Cast), args),
            Mutation::Elem(e) => (Op::Elem(e), [vec![target], args].concat()),
            Mutation::MaskedFill => (Op::Elem(Elem::Where), vec![args[0], args[1], target]),
        };
        let name = g.values[target].name.clone();
        let mut cur = match (&op, inputs.as_slice()) {
            // A copy of a value of the target's very type is that value.
            (Op::Elem(Elem::Cast), [src]) if *g.ty(*src) == ty => *src,
            _ => {
                let pure = g.make_node(block, op, inputs, &[(&name, ty)], span);
                inserted.push(pure);
                g.nodes[pure].outputs[0]
            }
        };
        // Pass up: an Assign along each view edge to the owner.
        let mut x = target;
        let mut assigns = 0;
        while let Some((base, vnode)) = view_parent(g, x) {
            let Op::View(view) = g.nodes[vnode].op.clone() else {
                unreachable!("a view parent")
            };
            let mut inputs = vec![base, cur];
            inputs.extend(g.nodes[vnode].inputs[1..].iter().copied());
            let ty = g.ty(base).clone();
            let bname = g.values[base].name.clone();
            let a = g.make_node(block, Op::Assign(view), inputs, &[(&bname, ty)], span);
            inserted.push(a);
            cur = g.nodes[a].outputs[0];
            x = base;
            assigns += 1;
        }
        // Pass down from the owner: Updates, and Accesses for the views
        // that dominate the mutation.
        let mut accesses = 0;
        let mut stack = vec![(x, cur)];
        while let Some((old, new)) = stack.pop() {
            let u = g.make_node(block, Op::Update, vec![new, old], &[], span);
            inserted.push(u);
            for &(child, vnode) in children.get(&old).map(Vec::as_slice).unwrap_or(&[]) {
                if !dominates(g, &order, vnode, n) || !live.after(g, child, vnode, n) {
                    continue;
                }
                let Op::View(view) = g.nodes[vnode].op.clone() else {
                    unreachable!("a view child")
                };
                let mut inputs = vec![new];
                inputs.extend(g.nodes[vnode].inputs[1..].iter().copied());
                let ty = g.ty(child).clone();
                let cname = g.values[child].name.clone();
                let a = g.make_node(block, Op::Access(view), inputs, &[(&cname, ty)], span);
                inserted.push(a);
                accesses += 1;
                stack.push((child, g.nodes[a].outputs[0]));
            }
        }
        replacing.insert(n, inserted);
        removed.push(Removed {
            span,
            assigns,
            accesses,
        });
    }
    if !replacing.is_empty() {
        for b in 0..g.blocks.len() {
            if g.blocks[b].nodes.iter().any(|k| replacing.contains_key(k)) {
                let nodes = std::mem::take(&mut g.blocks[b].nodes);
                g.blocks[b].nodes = nodes
                    .into_iter()
                    .flat_map(|k| replacing.remove(&k).unwrap_or_else(|| vec![k]))
                    .collect();
            }
        }
    }
    removed
}

/// Which views are live after a mutation (Algorithm 1's pass-down updates
/// only those): a view, or a view of it, is read later in program order,
/// or anywhere in a loop around the mutation that the view was defined
/// outside of (the next iteration reads it after the mutation). Without
/// this, every mutation of a cache written once per step of an unrolled
/// loop would re-access every earlier step's view: quadratic work, all of
/// it dead.
struct Liveness {
    /// Each node's index in program order (pre-order).
    pre: HashMap<NodeId, usize>,
    /// A region node's last index in program order (its blocks' nodes).
    end: HashMap<NodeId, usize>,
    /// Each value's last use, with its views' uses (region results and
    /// block returns count as used to the end).
    last: HashMap<ValueId, usize>,
}

impl Liveness {
    fn of(g: &Graph, children: &HashMap<ValueId, Vec<(ValueId, NodeId)>>) -> Liveness {
        let order = program_order(g);
        let pre: HashMap<NodeId, usize> = order.iter().enumerate().map(|(i, &n)| (n, i)).collect();
        let mut end = HashMap::new();
        fn last_index(g: &Graph, pre: &HashMap<NodeId, usize>, n: NodeId) -> usize {
            g.nodes[n]
                .blocks
                .iter()
                .filter_map(|&b| g.blocks[b].nodes.last())
                .map(|&m| last_index(g, pre, m))
                .max()
                .unwrap_or(pre[&n])
        }
        for &n in &order {
            if !g.nodes[n].blocks.is_empty() {
                end.insert(n, last_index(g, &pre, n));
            }
        }
        let mut last: HashMap<ValueId, usize> = HashMap::new();
        for &n in &order {
            for &v in &g.nodes[n].inputs {
                let e = last.entry(v).or_insert(0);
                *e = (*e).max(pre[&n]);
            }
        }
        for b in &g.blocks {
            for &v in &b.returns {
                last.insert(v, usize::MAX);
            }
        }
        // Views are made after their bases, so a walk from the last node
        // back folds each view's last use into its base's before the base
        // is reached.
        for &n in order.iter().rev() {
            for &v in &g.nodes[n].outputs {
                for &(child, _) in children.get(&v).map(Vec::as_slice).unwrap_or(&[]) {
                    let c = last.get(&child).copied().unwrap_or(0);
                    let e = last.entry(v).or_insert(0);
                    *e = (*e).max(c);
                }
            }
        }
        Liveness { pre, end, last }
    }

    /// Whether `view` (made by `vnode`) is live after mutation `n`.
    fn after(&self, g: &Graph, view: ValueId, vnode: NodeId, n: NodeId) -> bool {
        let mut threshold = self.pre[&n];
        let v = self.pre[&vnode];
        let mut b = g.nodes[n].block;
        while let Some(owner) = g.blocks[b].owner {
            let inside = self.pre[&owner] <= v && v <= self.end[&owner];
            if matches!(g.nodes[owner].op, Op::Loop { .. }) && !inside {
                threshold = threshold.min(self.pre[&owner]);
            }
            b = g.nodes[owner].block;
        }
        self.last.get(&view).is_some_and(|&u| u > threshold)
    }
}

/// Carries each Update out of the regions between it and its value's
/// definition (Algorithm 1, lines 17-32).
fn block_propagation(g: &mut Graph) {
    let updates: Vec<NodeId> = program_order(g)
        .into_iter()
        .filter(|&n| g.nodes[n].op == Op::Update)
        .collect();
    // The values a region node already carries out.
    let mut carried: HashSet<(NodeId, ValueId)> = HashSet::new();
    for u in updates {
        let x = g.nodes[u].inputs[1];
        let end = g.block_of(x);
        let mut b = g.nodes[u].block;
        while b != end {
            let Some(node) = g.blocks[b].owner else { break };
            if carried.contains(&(node, x)) {
                b = g.nodes[node].block;
                continue;
            }
            let ty = g.ty(x).clone();
            let name = g.values[x].name.clone();
            let x0 = g.add_output(node, &name, ty.clone());
            carried.insert((node, x));
            let parent = g.nodes[node].block;
            let after = g.make_node(parent, Op::Update, vec![x0, x], &[], g.nodes[node].span);
            let pos = g.blocks[parent]
                .nodes
                .iter()
                .position(|&m| m == node)
                .expect("placed");
            g.blocks[parent].nodes.insert(pos + 1, after);
            match g.nodes[node].op {
                Op::Loop { .. } => {
                    g.blocks[b].returns.push(x);
                    g.nodes[node].inputs.push(x);
                    let xp = g.add_param(b, &name, ty);
                    let start = g.make_node(b, Op::Update, vec![xp, x], &[], g.nodes[node].span);
                    g.blocks[b].nodes.insert(0, start);
                }
                _ => {
                    // A branch: both sides return it (the other side's is
                    // its own latest version, or the value from before).
                    for side in g.nodes[node].blocks.clone() {
                        g.blocks[side].returns.push(x);
                    }
                }
            }
            b = parent;
        }
    }
}

/// Replaces each use of `x` after `Update(x', x)` by `x'` (scoped by
/// block: a region's Updates reach the outer block through the Updates
/// block propagation put after it) and removes the Updates.
fn rename(g: &mut Graph) {
    // A storage updated in every iteration of an unrolled loop is read by
    // its first name throughout, so chains grow as long as the loop; each
    // resolution points the names it passed at the end of the chain.
    fn resolve(map: &mut HashMap<ValueId, ValueId>, v: ValueId) -> ValueId {
        let mut end = v;
        while let Some(&w) = map.get(&end) {
            if w == end {
                break;
            }
            end = w;
        }
        let mut at = v;
        while at != end {
            let next = map[&at];
            map.insert(at, end);
            at = next;
        }
        end
    }
    fn walk(g: &mut Graph, b: BlockId, mut map: HashMap<ValueId, ValueId>) {
        let nodes = g.blocks[b].nodes.clone();
        let mut keep = Vec::new();
        for n in nodes {
            let inputs: Vec<ValueId> = g.nodes[n]
                .inputs
                .iter()
                .map(|&v| resolve(&mut map, v))
                .collect();
            g.nodes[n].inputs = inputs;
            if g.nodes[n].op == Op::Update {
                let (new, old) = (g.nodes[n].inputs[0], g.nodes[n].inputs[1]);
                // Inputs were resolved already, so `old` is the current
                // version; earlier names reach `new` through the chain.
                map.insert(old, new);
                continue;
            }
            keep.push(n);
            for inner in g.nodes[n].blocks.clone() {
                walk(g, inner, map.clone());
            }
        }
        g.blocks[b].nodes = keep;
        let returns: Vec<ValueId> = g.blocks[b]
            .returns
            .iter()
            .map(|&v| resolve(&mut map, v))
            .collect();
        g.blocks[b].returns = returns;
    }
    walk(g, ROOT, HashMap::new());
}

fn views_to_accesses(g: &mut Graph) {
    for node in &mut g.nodes {
        if let Op::View(v) = &node.op {
            node.op = Op::Access(v.clone());
        }
    }
}

/// Removes nodes whose outputs nothing uses, and region outputs (with
/// their carried parameters) that nothing outside their own update uses.
fn dce(g: &mut Graph) {
    loop {
        let mut used: HashSet<ValueId> = HashSet::new();
        for b in &g.blocks {
            used.extend(&b.returns);
        }
        for n in program_order(g) {
            used.extend(&g.nodes[n].inputs);
        }
        let mut changed = false;
        for b in 0..g.blocks.len() {
            let before = g.blocks[b].nodes.len();
            let nodes = g.blocks[b].nodes.clone();
            g.blocks[b].nodes = nodes
                .into_iter()
                .filter(|&n| g.nodes[n].outputs.iter().any(|o| used.contains(o)))
                .collect();
            changed |= g.blocks[b].nodes.len() != before;
        }
        changed |= prune_region_outputs(g, &used);
        if !changed {
            break;
        }
    }
}

/// Drops the region outputs nothing uses. A branch's go with their
/// returns; a loop's carried slot goes when neither its output nor the
/// computation of any slot that stays (or of the condition) reads its
/// parameter: liveness to a fixed point over the body.
fn prune_region_outputs(g: &mut Graph, used: &HashSet<ValueId>) -> bool {
    let mut changed = false;
    for n in program_order(g) {
        let keep: Vec<usize> = match g.nodes[n].op {
            Op::If => (0..g.nodes[n].outputs.len())
                .filter(|&k| used.contains(&g.nodes[n].outputs[k]))
                .collect(),
            Op::Loop { conditional, .. } => live_slots(g, n, conditional, used),
            _ => continue,
        };
        if keep.len() == g.nodes[n].outputs.len() {
            continue;
        }
        changed = true;
        match g.nodes[n].op {
            Op::If => {
                for side in g.nodes[n].blocks.clone() {
                    let r: Vec<ValueId> = keep.iter().map(|&k| g.blocks[side].returns[k]).collect();
                    g.blocks[side].returns = r;
                }
            }
            Op::Loop {
                counted,
                conditional,
            } => {
                let b = g.nodes[n].blocks[0];
                let (fi, fr) = (
                    counted as usize + conditional as usize,
                    conditional as usize,
                );
                let inputs: Vec<ValueId> = g.nodes[n].inputs[..fi]
                    .iter()
                    .copied()
                    .chain(keep.iter().map(|&k| g.nodes[n].inputs[fi + k]))
                    .collect();
                g.nodes[n].inputs = inputs;
                let params: Vec<ValueId> = std::iter::once(g.blocks[b].params[0])
                    .chain(keep.iter().map(|&k| g.blocks[b].params[1 + k]))
                    .collect();
                for (k, &p) in params.iter().enumerate() {
                    g.values[p].origin = Origin::Param(b, k);
                }
                g.blocks[b].params = params;
                let returns: Vec<ValueId> = g.blocks[b].returns[..fr]
                    .iter()
                    .copied()
                    .chain(keep.iter().map(|&k| g.blocks[b].returns[fr + k]))
                    .collect();
                g.blocks[b].returns = returns;
            }
            _ => unreachable!("regions only"),
        }
        let outs: Vec<ValueId> = keep.iter().map(|&k| g.nodes[n].outputs[k]).collect();
        for (k, &o) in outs.iter().enumerate() {
            g.values[o].origin = Origin::Node(n, k);
        }
        g.nodes[n].outputs = outs;
    }
    changed
}

/// The carried slots of loop `n` that must stay.
fn live_slots(g: &Graph, n: NodeId, conditional: bool, used: &HashSet<ValueId>) -> Vec<usize> {
    let b = g.nodes[n].blocks[0];
    let first = conditional as usize;
    let slots = g.nodes[n].outputs.len();
    let mut live: Vec<bool> = (0..slots)
        .map(|k| used.contains(&g.nodes[n].outputs[k]))
        .collect();
    loop {
        let mut needed: HashSet<ValueId> = HashSet::new();
        if conditional {
            needed.insert(g.blocks[b].returns[0]);
        }
        for k in (0..slots).filter(|&k| live[k]) {
            needed.insert(g.blocks[b].returns[first + k]);
        }
        let reads = needed_reads(g, b, needed);
        let mut grew = false;
        for (k, l) in live.iter_mut().enumerate() {
            if !*l && reads.contains(&g.blocks[b].params[1 + k]) {
                *l = true;
                grew = true;
            }
        }
        if !grew {
            return (0..slots).filter(|&k| live[k]).collect();
        }
    }
}

/// The values block `b`'s computation of `needed` reads (walking back
/// through its nodes; a region node needed for one output counts as
/// reading everything it and its blocks read).
fn needed_reads(g: &Graph, b: BlockId, mut needed: HashSet<ValueId>) -> HashSet<ValueId> {
    for &n in g.blocks[b].nodes.iter().rev() {
        let node = &g.nodes[n];
        if !node.outputs.iter().any(|o| needed.contains(o)) {
            continue;
        }
        needed.extend(&node.inputs);
        let mut stack = node.blocks.clone();
        while let Some(inner) = stack.pop() {
            needed.extend(&g.blocks[inner].returns);
            for &m in &g.blocks[inner].nodes {
                needed.extend(&g.nodes[m].inputs);
                stack.extend(&g.nodes[m].blocks);
            }
        }
    }
    needed
}

/// The view a node applies, for Access and Assign nodes and views.
pub fn view_of(op: &Op) -> Option<&View> {
    match op {
        Op::View(v) | Op::Access(v) | Op::Assign(v) => Some(v),
        _ => None,
    }
}
