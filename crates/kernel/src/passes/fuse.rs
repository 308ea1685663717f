//! `fuse`: merges producer→consumer chains of root children that work on
//! the same output element into one block, so the element is computed in a
//! local accumulator and stored once (TC's MLP layers: bias, matrix product
//! and ReLU on `O1(b, n)`; an `_init` block and its reduction).
//!
//! A chain is a run of two or more consecutive block statements of the root
//! (stages) that each write exactly one kernel buffer `T`, the same for all,
//! and nothing else. Every view of `T` in a stage is a single element whose
//! access is the same list of distinct plain indices, one per dimension of
//! `T` (the stage's output indices), with the same ranges in every stage; a
//! stage may have further indices (reduction indices), and its constraints
//! may mention any of its indices. Its other views of kernel buffers are
//! only read, its statements use the views of `T` only through `load` and
//! `store` (no `gather`, no nested block refines them), and nothing between
//! the stages runs, so every read of `T` in the chain is of the element the
//! stage writes.
//!
//! The chain becomes one block tagged `#fused` over the output indices of
//! the first stage. It holds a view of the element of `T`, a rank-0 local
//! accumulator, and for every stage, in order: its statements inline (when
//! the stage has no other indices, no constraints, no nested blocks, no
//! local buffers, and only `assign` views of `T`), with indices, views and
//! scalars renamed; or else a child block: the stage with its output
//! indices passed from the fused block (`b:1 = b`), its constraints, its
//! views of `T` refining the accumulator (same direction and aggregation)
//! and its other views refining whole views of their kernel buffers in the
//! fused block. The fused block ends by storing the accumulator into `T`.
//! The accumulator starts from the element's value: when the first stage is
//! inline and stores to the element before loading it, that store sets it;
//! otherwise the fused block loads the element first.
//!
//! The kernel options choose per pair: a stage given `fuse off` ends its
//! chain (the next stage starts another); the record says `fuse on` for
//! every stage fused with the one after it, and `fuse off` where a chain
//! was cut.
//!
//! Requires: a verified kernel. Guarantees: every element of `T` sees the
//! same aggregations of the same values in the same order as before (stages
//! in order, the points of a stage in row-major order of its remaining
//! indices), and distinct elements never read one another, so results are
//! unchanged bit for bit; a verified kernel (a fused block that does not
//! verify is dropped and the chain kept). Chains outside this scope, and
//! blocks below the root, are left unchanged.

use std::collections::{HashMap, HashSet};

use crate::{
    Affine, Agg, Block, ChildVerifier, Dim, Index, Pass, PassCx, RefDir, Refinement, Statement,
    StmtKind, Tags, Target,
};

#[derive(Debug)]
pub struct Fuse;

impl Pass for Fuse {
    fn name(&self) -> &'static str {
        "fuse"
    }

    fn run(&self, root: &mut Block, target: &Target) -> Result<(), String> {
        self.run_with(root, &PassCx::defaults(target))
    }

    fn run_with(&self, root: &mut Block, cx: &PassCx) -> Result<(), String> {
        let stmts = std::mem::take(&mut root.stmts);
        let check = ChildVerifier::new(root);
        let mut out = Vec::with_capacity(stmts.len());
        let mut i = 0;
        while i < stmts.len() {
            let mut chain: Vec<Stage> = stage_of(root, &stmts[i]).into_iter().collect();
            let mut end = i + 1;
            // The options may cut the chain after a stage (`fuse off`):
            // every pair a chain could join is a choice.
            let mut cut = None;
            while let Some(first) = chain.first() {
                match stmts.get(end).and_then(|s| stage_of(root, s)) {
                    Some(s) if s.buffer == first.buffer && s.ranges == first.ranges => {
                        let last = &chain[chain.len() - 1].block.name;
                        if cx.given.step(last).fuse == Some(false) {
                            cut = Some(last.clone());
                            break;
                        }
                        chain.push(s);
                        end += 1;
                    }
                    _ => break,
                }
            }
            if let Some(name) = cut {
                cx.record(&name, |o| o.fuse = Some(false));
            }
            match (chain.len() >= 2)
                .then(|| fuse(root, &check, &chain))
                .flatten()
            {
                Some(fused) => {
                    for s in &chain[..chain.len() - 1] {
                        cx.record(&s.block.name, |o| o.fuse = Some(true));
                    }
                    out.push(fused);
                    i = end;
                }
                None => {
                    out.push(stmts[i].clone());
                    i += 1;
                }
            }
        }
        root.stmts = out;
        Ok(())
    }
}

/// A root child that may join a chain.
struct Stage<'a> {
    stmt: &'a Statement,
    block: &'a Block,
    /// The kernel buffer the stage writes.
    buffer: String,
    /// The stage's index for each dimension of the buffer.
    outs: Vec<String>,
    /// The ranges of `outs`.
    ranges: Vec<u64>,
    /// The names of the stage's views of the buffer.
    targets: HashSet<String>,
    /// Whether the statements can run directly in the fused block.
    inline: bool,
}

/// The plain index an access form is, if it is one.
fn plain(a: &Affine) -> Option<&str> {
    match (a.constant, a.terms.iter().next()) {
        (0, Some((n, 1))) if a.terms.len() == 1 => Some(n),
        _ => None,
    }
}

/// `s` as a stage of a chain, if it is in scope.
fn stage_of<'a>(root: &Block, s: &'a Statement) -> Option<Stage<'a>> {
    let StmtKind::Block(b) = &s.kind else {
        return None;
    };
    if b.is_library() || b.idxs.iter().any(|ix| ix.affine.is_some()) {
        return None;
    }
    let writes = |d: RefDir| matches!(d, RefDir::Out | RefDir::InOut);
    let mut buffer: Option<&str> = None;
    for r in &b.refs {
        if let (Some(f), true) = (&r.from, writes(r.dir)) {
            if buffer.is_some_and(|t| t != f) {
                return None;
            }
            buffer = Some(f);
        }
    }
    let buffer = buffer?;
    root.refinement(buffer)?;
    let views: Vec<&Refinement> = b
        .refs
        .iter()
        .filter(|r| r.from.as_deref() == Some(buffer))
        .collect();
    let access = &views.first()?.access;
    let outs: Vec<String> = access
        .iter()
        .map(|a| plain(a).map(str::to_string))
        .collect::<Option<_>>()?;
    let distinct: HashSet<&String> = outs.iter().collect();
    if distinct.len() != outs.len()
        || views
            .iter()
            .any(|r| &r.access != access || r.shape.iter().any(|d| d.size != 1))
    {
        return None;
    }
    let ranges = outs
        .iter()
        .map(|n| b.index(n).map(|ix| ix.range))
        .collect::<Option<Vec<u64>>>()?;
    let targets: HashSet<String> = views.iter().map(|r| r.into.clone()).collect();
    for st in &b.stmts {
        match &st.kind {
            StmtKind::Gather { from, .. } if targets.contains(from) => return None,
            StmtKind::Block(c)
                if c.refs
                    .iter()
                    .any(|r| r.from.as_ref().is_some_and(|f| targets.contains(f))) =>
            {
                return None
            }
            _ => {}
        }
    }
    let inline = b.idxs.len() == outs.len()
        && b.constraints.is_empty()
        && b.refs.iter().all(|r| r.from.is_some())
        && views.iter().all(|r| r.agg == Agg::Assign)
        && !b
            .stmts
            .iter()
            .any(|st| matches!(st.kind, StmtKind::Block(_)));
    Some(Stage {
        stmt: s,
        block: b,
        buffer: buffer.to_string(),
        outs,
        ranges,
        targets,
        inline,
    })
}

/// `base`, or `base_1`, `base_2`, ... : the first name not in `used`, which
/// then holds it.
fn fresh(used: &mut HashSet<String>, base: &str) -> String {
    let mut name = base.to_string();
    let mut k = 0;
    while used.contains(&name) {
        k += 1;
        name = format!("{base}_{k}");
    }
    used.insert(name.clone());
    name
}

fn stmt(kind: StmtKind) -> Statement {
    Statement {
        kind,
        tags: Tags::new(),
    }
}

/// The fused block under construction.
struct Fused {
    block: Block,
    /// Names of the block's refinements.
    views: HashSet<String>,
    /// Names of the scalars its statements define.
    scalars: HashSet<String>,
    /// The accumulator's name.
    acc: String,
    /// Kernel buffer to the name of its whole view in the fused block.
    whole: HashMap<String, String>,
}

impl Fused {
    /// The name of a whole view of kernel buffer `from` (added if new).
    fn whole_view(&mut self, root: &Block, from: &str) -> Option<String> {
        if let Some(n) = self.whole.get(from) {
            return Some(n.clone());
        }
        let r = root.refinement(from)?;
        let into = fresh(&mut self.views, from);
        self.block.refs.push(Refinement {
            dir: RefDir::In,
            from: Some(from.to_string()),
            into: into.clone(),
            access: vec![Affine::constant(0); r.shape.len()],
            dtype: r.dtype,
            shape: r.shape.clone(),
            agg: Agg::Assign,
            location: None,
            tags: Tags::new(),
        });
        self.whole.insert(from.to_string(), into.clone());
        Some(into)
    }

    /// Appends the statements of an inline stage; `rename` maps its output
    /// indices to the fused block's.
    fn inline(&mut self, st: &Stage, rename: &dyn Fn(&Affine) -> Affine) {
        let mut views: HashMap<&str, String> = HashMap::new();
        for r in &st.block.refs {
            if st.targets.contains(&r.into) {
                views.insert(&r.into, self.acc.clone());
                continue;
            }
            let mut moved = r.clone();
            moved.access = r.access.iter().map(rename).collect();
            let same = self.block.refs.iter().find(|f| {
                Refinement {
                    into: f.into.clone(),
                    ..moved.clone()
                } == **f
            });
            let name = match same {
                Some(f) => f.into.clone(),
                None => {
                    moved.into = fresh(&mut self.views, &r.into);
                    let name = moved.into.clone();
                    self.block.refs.push(moved);
                    name
                }
            };
            views.insert(&r.into, name);
        }
        let view = |n: &String| views.get(n.as_str()).cloned().unwrap_or_else(|| n.clone());
        let mut scalars: HashMap<&str, String> = HashMap::new();
        for s in &st.block.stmts {
            let use_ = |scalars: &HashMap<&str, String>, n: &String| {
                scalars
                    .get(n.as_str())
                    .cloned()
                    .unwrap_or_else(|| n.clone())
            };
            let kind = match &s.kind {
                StmtKind::Load { from, into } => StmtKind::Load {
                    from: view(from),
                    into: self.define(&mut scalars, into),
                },
                StmtKind::Store { from, into } => StmtKind::Store {
                    from: use_(&scalars, from),
                    into: view(into),
                },
                StmtKind::LoadIndex { from, into } => StmtKind::LoadIndex {
                    from: rename(from),
                    into: self.define(&mut scalars, into),
                },
                StmtKind::Constant { into, value, dtype } => StmtKind::Constant {
                    into: self.define(&mut scalars, into),
                    value: *value,
                    dtype: *dtype,
                },
                StmtKind::Intrinsic {
                    op,
                    inputs,
                    into,
                    dtype,
                } => StmtKind::Intrinsic {
                    op: op.clone(),
                    inputs: inputs.iter().map(|n| use_(&scalars, n)).collect(),
                    into: self.define(&mut scalars, into),
                    dtype: *dtype,
                },
                StmtKind::Gather {
                    from,
                    indices,
                    into,
                } => StmtKind::Gather {
                    from: view(from),
                    indices: indices.iter().map(|n| use_(&scalars, n)).collect(),
                    into: self.define(&mut scalars, into),
                },
                // Inline stages have no nested blocks.
                StmtKind::Block(_) => s.kind.clone(),
            };
            self.block.stmts.push(Statement {
                kind,
                tags: s.tags.clone(),
            });
        }
    }

    /// A fresh name for a scalar `name` the stage defines, remembered for
    /// the stage's later uses.
    fn define<'s>(&mut self, scalars: &mut HashMap<&'s str, String>, name: &'s str) -> String {
        let n = fresh(&mut self.scalars, name);
        scalars.insert(name, n.clone());
        n
    }

    /// Appends a stage as a child block with its output indices passed.
    fn child(&mut self, root: &Block, st: &Stage, names: &[String]) -> Option<()> {
        let mut c = st.block.clone();
        for ix in &mut c.idxs {
            if let Some(d) = st.outs.iter().position(|o| *o == ix.name) {
                ix.range = 1;
                ix.affine = Some(Affine::index(&names[d]));
            }
        }
        for r in &mut c.refs {
            let Some(from) = &r.from else { continue };
            if st.targets.contains(&r.into) {
                r.from = Some(self.acc.clone());
                r.access.clear();
                r.shape.clear();
            } else {
                r.from = Some(self.whole_view(root, from)?);
            }
        }
        self.block.stmts.push(Statement {
            kind: StmtKind::Block(Box::new(c)),
            tags: st.stmt.tags.clone(),
        });
        Some(())
    }
}

/// Whether the accumulator must start from the element's value: unless the
/// first stage is inline and stores to the element before any load of it.
fn needs_preload(first: &Stage) -> bool {
    if !first.inline {
        return true;
    }
    for s in &first.block.stmts {
        match &s.kind {
            StmtKind::Store { into, .. } if first.targets.contains(into) => return false,
            StmtKind::Load { from, .. } if first.targets.contains(from) => return true,
            _ => {}
        }
    }
    true
}

/// The chain as one verified block (`check` verifies steps of `root`), or
/// `None` to keep it.
fn fuse(root: &Block, check: &ChildVerifier, chain: &[Stage]) -> Option<Statement> {
    let first = chain.first()?;
    let t = root.refinement(&first.buffer)?;
    let names = &first.outs;
    let mut block = Block::new(&format!("{}_fused", first.block.name));
    // An initializing reduction's identity store carries the same comment
    // as the reduction; each source statement is named once.
    let mut comments: Vec<&str> = Vec::new();
    for c in chain.iter().map(|s| s.block.comment.as_str()) {
        if !c.is_empty() && !comments.contains(&c) {
            comments.push(c);
        }
    }
    block.comment = comments.join("; ");
    block.tags.insert("fused".to_string());
    block.idxs = names
        .iter()
        .zip(&first.ranges)
        .map(|(n, &range)| Index {
            name: n.clone(),
            range,
            affine: None,
            tags: first
                .block
                .index(n)
                .map(|ix| ix.tags.clone())
                .unwrap_or_default(),
        })
        .collect();
    let mut views = HashSet::new();
    let view = fresh(&mut views, &t.into);
    let acc = fresh(&mut views, &format!("{}_acc", t.into));
    let preload = needs_preload(first);
    block.refs.push(Refinement {
        dir: if preload { RefDir::InOut } else { RefDir::Out },
        from: Some(t.into.clone()),
        into: view.clone(),
        access: names.iter().map(|n| Affine::index(n)).collect(),
        dtype: t.dtype,
        shape: t.shape.iter().map(|d| Dim { size: 1, ..*d }).collect(),
        agg: Agg::Assign,
        location: None,
        tags: Tags::new(),
    });
    block.refs.push(Refinement {
        dir: RefDir::InOut,
        from: None,
        into: acc.clone(),
        access: Vec::new(),
        dtype: t.dtype,
        shape: Vec::new(),
        agg: Agg::Assign,
        location: None,
        tags: Tags::new(),
    });
    let mut f = Fused {
        block,
        views,
        scalars: HashSet::new(),
        acc: acc.clone(),
        whole: HashMap::new(),
    };
    if preload {
        let v = fresh(&mut f.scalars, "init");
        f.block.stmts.push(stmt(StmtKind::Load {
            from: view.clone(),
            into: v.clone(),
        }));
        f.block.stmts.push(stmt(StmtKind::Store {
            from: v,
            into: acc.clone(),
        }));
    }
    for st in chain {
        if st.inline {
            let map: HashMap<&str, &String> = st
                .outs
                .iter()
                .map(String::as_str)
                .zip(names.iter())
                .collect();
            let rename = |a: &Affine| a.subst(&|n| map.get(n).map(|m| Affine::index(m)));
            f.inline(st, &rename);
        } else {
            f.child(root, st, names)?;
        }
    }
    let v = fresh(&mut f.scalars, "acc");
    f.block.stmts.push(stmt(StmtKind::Load {
        from: acc,
        into: v.clone(),
    }));
    f.block.stmts.push(stmt(StmtKind::Store {
        from: v,
        into: view,
    }));
    check.verify(&f.block).ok()?;
    Some(Statement {
        kind: StmtKind::Block(Box::new(f.block)),
        tags: first.stmt.tags.clone(),
    })
}
