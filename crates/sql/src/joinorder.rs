//! Join order: a tree of inner joins (comma joins, CROSS and INNER JOIN without
//! USING) planned as one set of relations and conditions, in the order and with
//! the methods the estimates make cheapest (planner rule 6).
//!
//! Rules (cited as "join order rule N"):
//! 1. The inner-join tree is flattened into its leaves (any other rel: a table, a
//!    subquery, an outer join, a join with USING columns) and its conditions (the
//!    ONs and the WHERE conjuncts above it), in the tree's own row layout.
//! 2. A condition over one leaf filters that leaf's scan; over several, it is a join
//!    condition, applied at the lowest join that has all its leaves; over none of
//!    them, or holding a correlated subquery, it is tested on the finished row.
//! 3. Sizes are estimated as PostgreSQL does without statistics (`estimate`): a
//!    table's pages by its tuple width; PostgreSQL's default selectivities; an
//!    equality join 1 / the larger number of distinct values, a column of a unique
//!    index having as many as its table has rows, any other 200.
//! 4. Up to [`EXHAUSTIVE`] leaves, every bushy order is searched (dynamic
//!    programming over subsets, joins with a condition before cross products, as
//!    PostgreSQL's standard join search); beyond, a greedy order (the cheapest next
//!    join each time); past 64 leaves, the query's own order.
//! 5. A join with an equality between its sides is a hash join building the
//!    smaller side; any other a nested loop over the smaller side, materialized.
//!    Costs are `cost`'s, in PostgreSQL's units and by its formulas: each leaf
//!    its planned scan's total ([`crate::cost::Costs`]); a hash join the smaller
//!    side's rows hashed, the other's probed, half a bucket's rows compared per
//!    probe and a tuple per joined row; a nested loop the inner side
//!    materialized and re-read per outer row ([`join_cost`]).
//! 6. The finished row is put back in the tree's layout (a projection), so nothing
//!    above the join sees the order chosen.
//! 7. Each leaf's scan is projected to the columns read above it (by the query, as
//!    the planner found them, or by a join condition); the others are NULL in the
//!    finished row, so a hash table holds only what is read; a correlated
//!    subquery above counts the columns of the row it reads as outer references.
//! 8. An OR over several leaves also filters each leaf that every arm restricts, by
//!    the OR of the arms' conjuncts over it ([`or_restrictions`]).
//! 9. A join of a table leaf whose index serves an equality with the other side
//!    may be a nested loop probing that index once per outer row (PostgreSQL's
//!    parameterized index scan; the inner scan's index condition reads the outer
//!    row, [`index_nested_loop`]). The search weighs it at each join of one leaf
//!    against the hash join ([`join_cost`]): the outer side's cost plus, per outer
//!    row, one run of the index scan as `cost` rule 3 prices a scan run many
//!    times (its descent, its index and heap pages, the pages all runs fetch
//!    shared among them), the runs being the fewest rows of a leaf the probe's
//!    key reads (PostgreSQL's get_loop_count); the join takes the method the
//!    search chose, so an order that reaches a large table through its index is
//!    found.
//! 10. A WHERE conjunct with a correlated subquery that reads one leaf (its own
//!     columns and the subquery's outer references) is tested at the first join
//!     above that leaf, not after the last: the joins that shrink the leaf's rows
//!     come first, and the test runs where parallel workers run the join. The
//!     subquery's outer references index the tree's row, so the joined row is put
//!     in that layout for the test ([`tested_whole`]). One over several leaves
//!     stays above the whole tree.
//! 11. Costs are weighed as parallel rule 2 runs the plan ([`Split`]): the
//!     driving scan (the bottom of the outer side, the larger in rows at each
//!     join) and the work per row of it are shared among the workers, so divided
//!     by the parallel divisor where that scan is of a table of at least
//!     `parallel::MIN_PAGES`; an inner side is run whole by each worker, so
//!     counted whole (a loop's materialized rows, a hash table built), except
//!     a hash table whose side is driven by a scan of such a table: the workers
//!     build it together (parallel rule 7), so that side's driving scan and
//!     work per row are shared too.
//! 12. Equalities between plain columns of different leaves make classes of
//!     equal columns (PostgreSQL's equivalence classes); a class over three
//!     leaves or more adds the equality of each pair of its columns in leaves
//!     not yet joined by it ([`equivalences`]), so `c.nk = s.nk AND s.nk =
//!     n.nk` also joins `c` to `n` (TPC-H Q5's customer → nation). A derived
//!     equality counts in the estimates only where the query's own leave its
//!     leaves apart, and a join applies one equality of a class (the query's own
//!     first); the others are implied.

use crate::analyze::{JoinKind, Rel};
use crate::bind::{BinOp, Expr};
use crate::cost::{Costs, Units};
use crate::estimate::{self, Sizes};
use crate::planner::{self, Plan, Relations};
use crate::SqlResult;

/// Join order rule 4: leaves searched exhaustively.
pub(crate) const EXHAUSTIVE: usize = 10;

/// Join order rule 4: leaves ordered at all (a bit each in a `u64`).
const MAX_LEAVES: usize = 64;

/// One leaf of the flattened tree.
struct Leaf<'q> {
    rel: &'q Rel,
    offset: usize,
    width: usize,
    /// Its filter, over its own row.
    conjs: Vec<Expr>,
    rows: f64,
    /// Its rows before its filter (what a full scan reads).
    base: f64,
    /// Its planned scan's total cost (join order rule 5).
    cost: f64,
    /// Its table's pages (0 for any other leaf: join order rule 11).
    pages: f64,
    /// Join order rule 9: the index probes that could read it from other leaves'
    /// rows.
    probes: Vec<Probe>,
}

/// Join order rule 9: a leaf's index serving an equality with other leaves.
struct Probe {
    /// The leaves the equality's other side reads.
    outer: u64,
    /// The rows one probe fetches (before the leaf's own filter).
    fetched: f64,
    /// The table's pages.
    pages: f64,
    /// The index's leading column's squared correlation with the heap.
    corr2: f64,
    /// The operators of the leaf's own filter, tested on each row fetched.
    filter_ops: f64,
}

impl Probe {
    /// Join order rule 9: one probe of `loops` (cost rule 3's index scan run).
    fn cost(&self, base: f64, u: &Units, loops: f64) -> f64 {
        let run = crate::cost::IndexRun {
            tuples: base,
            pages: self.pages,
            sel: (self.fetched / base.max(1.0)).min(1.0),
            conds: 1.0,
            corr2: self.corr2,
            unseen: 1.0,
            loops,
        };
        let (startup, index, heap) = run.costs(u, self.pages == 0.0);
        let rows = self.fetched.max(1.0);
        startup + index + heap + rows * (u.cpu_tuple + self.filter_ops * u.cpu_operator)
    }
}

/// What the join search weighs (join order rules 3–5, 9).
struct Search<'a, 'q> {
    leaves: &'a [Leaf<'q>],
    conds: &'a [Cond],
    sel: &'a [f64],
    u: Units,
    /// Planner rule 8: with sequential scans or hash joins off, an index probe is
    /// taken wherever one serves.
    forced: bool,
    /// Join order rule 11: the parallel divisor (1 without workers).
    divisor: f64,
}

/// How a join's two parts are joined (join order rules 5 and 9).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Method {
    /// A hash join on their equalities, else a nested loop; `build` puts the
    /// smaller side inside.
    Keyed,
    /// The second part, one table leaf, probed through its index per row of the
    /// first.
    Probe,
}

/// A join condition over the tree's row and the leaves it reads.
struct Cond {
    expr: Expr,
    mask: u64,
    /// Join order rule 10: a correlated subquery's conjunct over one leaf, tested
    /// at the first join above it over the tree's row.
    lifted: bool,
    /// Join order rule 12: the class of equal columns this equality belongs to,
    /// where that class spans three leaves or more.
    class: Option<usize>,
    /// Join order rule 12: implied by the query's equalities, not among them.
    derived: bool,
}

/// How a set of leaves is joined (the search's result).
#[derive(Clone, Debug)]
enum Tree {
    Leaf(usize),
    Join(Box<Tree>, Box<Tree>, Method),
}

#[derive(Clone)]
struct Best {
    cost: f64,
    split: Split,
    rows: f64,
    tree: Tree,
}

/// A part's cost as parallel rule 2 would run it (join order rule 11): `spine`,
/// its driving scan (the bottom of its outer side) and the work per row of it,
/// shared among the workers; `whole`, what every worker runs whole (the inner
/// sides: hash tables built, loops' materialized rows); `driver`, the driving
/// scan's pages.
#[derive(Clone, Copy)]
struct Split {
    spine: f64,
    whole: f64,
    driver: f64,
}

impl Split {
    /// The elapsed cost: the spine divided by the parallel divisor where the
    /// driving scan is large enough to be shared (parallel rule 2).
    fn cost(&self, s: &Search<'_, '_>) -> f64 {
        match self.driver >= f64::from(crate::parallel::MIN_PAGES) {
            true => self.spine / s.divisor + self.whole,
            false => self.spine + self.whole,
        }
    }
}

/// Whether `j` is flattened into its parent's join search (join order rule 1).
pub(crate) fn flattens(j: &crate::analyze::Join) -> bool {
    j.kind == JoinKind::Inner
        && j.merged.is_empty()
        && !matches!(j.right, Rel::Lateral(_))
        && !j.on.as_ref().is_some_and(planner::has_correlated)
}

fn flatten<'q>(r: &'q Rel, offset: usize, leaves: &mut Vec<Leaf<'q>>, conds: &mut Vec<Expr>) {
    match r {
        Rel::Join(j) if flattens(j) => {
            flatten(&j.left, offset, leaves, conds);
            flatten(&j.right, offset + j.left_width, leaves, conds);
            if let Some(on) = &j.on {
                let mut v = Vec::new();
                planner::split_and(on.clone(), &mut v);
                conds.extend(v.into_iter().map(|c| planner::shift_up(c, offset)));
            }
        }
        r => leaves.push(Leaf {
            rel: r,
            offset,
            width: r.width(),
            conjs: Vec::new(),
            rows: 0.0,
            base: 0.0,
            cost: 0.0,
            pages: 0.0,
            probes: Vec::new(),
        }),
    }
}

/// The leaves `e` reads (a bit each).
fn leaf_mask(e: &Expr, leaves: &[Leaf<'_>]) -> u64 {
    let mut cols = Vec::new();
    crate::privileges::expr_columns(e, &mut cols);
    let mut mask = 0;
    for c in cols {
        if let Some(i) = leaves
            .iter()
            .position(|l| (l.offset..l.offset + l.width).contains(&c))
        {
            mask |= 1 << i;
        }
    }
    mask
}

/// Plans the inner-join tree `r` (a flattening join) with the conjuncts `above`
/// over its row (join order rules 1–6).
pub(crate) fn plan(
    r: &Rel,
    above: Vec<Expr>,
    needed: Option<&[bool]>,
    rels: &Relations<'_>,
) -> SqlResult<Plan> {
    let (mut leaves, mut all) = (Vec::new(), Vec::new());
    flatten(r, 0, &mut leaves, &mut all);
    if leaves.len() > MAX_LEAVES {
        // Join order rule 4: past the masks' bits, the query's own order.
        let Rel::Join(j) = r else {
            unreachable!("a flattening rel is a join")
        };
        return planner::join(j, above, rels);
    }
    all.extend(above);
    let width = r.width();
    let (mut conds, mut top) = (Vec::new(), Vec::new());
    for c in all {
        let mask = leaf_mask(&c, &leaves);
        if let Some(mask) = lifted_mask(&c, &leaves, width) {
            conds.push(Cond {
                expr: c,
                mask,
                lifted: true,
                class: None,
                derived: false,
            });
            continue;
        }
        if !planner::within(&c, 0..width) || mask == 0 {
            top.push(c);
        } else if mask.count_ones() == 1 {
            let l = &mut leaves[mask.trailing_zeros() as usize];
            l.conjs.push(planner::shift(c, l.offset));
        } else {
            for (i, r) in or_restrictions(&c, mask, &leaves) {
                let l = &mut leaves[i];
                l.conjs.push(planner::shift(r, l.offset));
            }
            conds.push(Cond {
                expr: c,
                mask,
                lifted: false,
                class: None,
                derived: false,
            });
        }
    }
    equivalences(&mut conds, &leaves);
    let sizes = Sizes::new(rels);
    for l in &mut leaves {
        l.rows = sizes.rel_rows(l.rel, &l.conjs);
        l.base = sizes.rel_rows(l.rel, &[]);
        if let Rel::Table { name, .. } = l.rel {
            l.pages = sizes.scan(name, []).map_or(0.0, |(_, p, _)| p);
        }
    }
    let sel = selectivities(&leaves, &conds, &sizes);
    probe_paths(&mut leaves, &conds, &sizes, rels);
    let keep = kept_columns(width, needed, &conds, &top);
    let plans = leaf_plans(&mut leaves, &keep, rels)?;
    let sw = rels.switches();
    let search = Search {
        leaves: &leaves,
        conds: &conds,
        sel: &sel,
        u: rels.units(),
        forced: !sw.seqscan || !sw.hashjoin,
        divisor: match sw.workers {
            0 => 1.0,
            w => crate::cost::divisor(w),
        },
    };
    let best = if leaves.len() <= EXHAUSTIVE {
        exhaustive(&search)
    } else {
        greedy(&search)
    };
    let mut done = Built {
        used: vec![false; conds.len()],
        plans,
    };
    let (p, layout) = build(&best.tree, (&leaves, &conds, &sel, &keep), &mut done, rels)?;
    let used = done.used;
    // A lifted conjunct no join took (an index nested loop's) is tested on top.
    for (c, u) in conds.iter().zip(&used) {
        if c.lifted && !u {
            top.push(c.expr.clone());
        }
    }
    let p = restore(p, &layout, width);
    Ok(planner::with_filter(p, planner::and_all(top)))
}

/// Join order rule 8: an OR over several leaves implies, for each leaf every arm
/// restricts, the OR of each arm's conjuncts over that leaf alone (PostgreSQL's
/// extract_restriction_or_clauses): `(p.a = 1 AND l.x < 5) OR (p.a = 2 AND l.x > 9)`
/// lets `p` be scanned with `p.a = 1 OR p.a = 2` (and `l` with `l.x < 5 OR l.x > 9`).
/// The OR itself stays the join's condition.
fn or_restrictions(c: &Expr, mask: u64, leaves: &[Leaf<'_>]) -> Vec<(usize, Expr)> {
    let mut arms = Vec::new();
    planner::split_bool(c.clone(), BinOp::Or, &mut arms);
    if arms.len() < 2 || arms.iter().any(|a| !crate::bind::engine_free(a)) {
        return Vec::new();
    }
    let arms: Vec<Vec<Expr>> = arms
        .into_iter()
        .map(|a| {
            let mut v = Vec::new();
            planner::split_and(a, &mut v);
            v
        })
        .collect();
    let mut out = Vec::new();
    for i in (0..leaves.len()).filter(|i| mask & (1 << i) != 0) {
        let per_arm: Vec<Vec<Expr>> = arms
            .iter()
            .map(|a| {
                a.iter()
                    .filter(|x| leaf_mask(x, leaves) == 1 << i)
                    .cloned()
                    .collect()
            })
            .collect();
        if per_arm.iter().all(|v| !v.is_empty()) {
            let ors = per_arm.into_iter().filter_map(planner::and_all).collect();
            out.push((i, Expr::Bool(BinOp::Or, ors)));
        }
    }
    out
}

/// Each condition's selectivity (join order rule 3); equalities between the same
/// two leaves are taken together, so a composite unique key counts once.
fn selectivities(leaves: &[Leaf<'_>], conds: &[Cond], sizes: &Sizes<'_>) -> Vec<f64> {
    let mut sel = vec![estimate::DEFAULT_INEQ_SEL; conds.len()];
    let mut done = vec![false; conds.len()];
    for i in 0..conds.len() {
        if done[i] || conds[i].mask.count_ones() != 2 {
            continue;
        }
        let mask = conds[i].mask;
        let (a, b) = (
            mask.trailing_zeros() as usize,
            63 - mask.leading_zeros() as usize,
        );
        let same: Vec<usize> = (i..conds.len())
            .filter(|&k| conds[k].mask == mask)
            .collect();
        let (la, lb) = (&leaves[a], &leaves[b]);
        let s = sizes.join_sel(
            same.iter().map(|&k| &conds[k].expr),
            (la.rel, la.offset, la.width),
            (lb.rel, lb.offset, lb.width),
        );
        // The whole group's selectivity on its first, 1 on the others.
        for (n, &k) in same.iter().enumerate() {
            sel[k] = if n == 0 { s } else { 1.0 };
            done[k] = true;
        }
    }
    sel
}

/// Join order rule 5: each leaf's scan planned once and costed (its `cost`),
/// kept for the join that reads it.
fn leaf_plans(
    leaves: &mut [Leaf<'_>],
    keep: &[bool],
    rels: &Relations<'_>,
) -> SqlResult<Vec<Option<Planned>>> {
    let mut plans = Vec::with_capacity(leaves.len());
    for l in leaves.iter() {
        plans.push(Some(leaf_plan(l, keep, rels)?));
    }
    let mut costs = Costs::new(rels);
    for (l, p) in leaves.iter_mut().zip(&plans) {
        l.cost = p.as_ref().map_or(0.0, |(p, _)| costs.of(p).total);
    }
    Ok(plans)
}

/// What `build` has taken: the conditions applied, and the leaves' scans planned
/// for the search (each taken by the join that reads it).
struct Built {
    used: Vec<bool>,
    plans: Vec<Option<Planned>>,
}

/// A part's plan and its row's layout (the tree-row column at each position).
type Planned = (Plan, Vec<usize>);

/// Estimated rows of the leaves in `mask` joined.
fn rows_of(mask: u64, leaves: &[Leaf<'_>], conds: &[Cond], sel: &[f64]) -> f64 {
    let mut rows: f64 = (0..leaves.len())
        .filter(|i| mask & (1 << i) != 0)
        .map(|i| leaves[i].rows)
        .product();
    // Join order rule 12: the query's own conditions as they are; a derived
    // equality only joins what they leave apart — per class, the leaves its
    // own equalities here do not connect, by the most selective derived ones.
    let mut derived: Vec<(usize, Vec<(u64, f64)>)> = Vec::new();
    for (c, s) in conds.iter().zip(sel) {
        if c.mask & mask != c.mask {
            continue;
        }
        match (c.derived, c.class) {
            (true, Some(k)) => match derived.iter_mut().find(|x| x.0 == k) {
                Some(x) => x.1.push((c.mask, *s)),
                None => derived.push((k, vec![(c.mask, *s)])),
            },
            _ => rows *= s,
        }
    }
    for (k, mut links) in derived {
        // The class's leaves here, grouped by the query's own equalities.
        let mut groups: Vec<u64> = Vec::new();
        let own = conds
            .iter()
            .filter(|c| c.class == Some(k) && !c.derived && c.mask & mask == c.mask);
        for m in own.map(|c| c.mask).chain(links.iter().map(|l| l.0)) {
            for bit in (0..64).filter(|b| m & (1u64 << b) != 0) {
                if !groups.iter().any(|g| g & (1u64 << bit) != 0) {
                    groups.push(1u64 << bit);
                }
            }
        }
        for c in conds
            .iter()
            .filter(|c| c.class == Some(k) && !c.derived && c.mask & mask == c.mask)
        {
            merge_groups(&mut groups, c.mask);
        }
        links.sort_by(|a, b| a.1.total_cmp(&b.1));
        for (m, s) in links {
            if merge_groups(&mut groups, m) {
                rows *= s;
            }
        }
    }
    rows.max(1.0)
}

/// Merges the groups holding the leaves of `mask`; whether it joined two.
fn merge_groups(groups: &mut Vec<u64>, mask: u64) -> bool {
    let hit: Vec<usize> = (0..groups.len())
        .filter(|&i| groups[i] & mask != 0)
        .collect();
    if hit.len() < 2 {
        return false;
    }
    let mut merged = 0;
    for &i in hit.iter().rev() {
        merged |= groups.remove(i);
    }
    groups.push(merged);
    true
}

/// Join order rule 12: equalities between plain columns of different leaves
/// make classes of equal columns (PostgreSQL's equivalence classes); where a
/// class spans three leaves or more, the equality of each pair of its columns
/// in leaves no condition joins yet is added, so `a.x = b.y AND b.y = c.z`
/// also joins `a` to `c` directly; not where a leaf holds two columns of the
/// class. (The binder casts a comparison of two types, so the columns of a class
/// share one.)
fn equivalences(conds: &mut Vec<Cond>, leaves: &[Leaf<'_>]) {
    let leaf_of = |c: usize| {
        leaves
            .iter()
            .position(|l| (l.offset..l.offset + l.width).contains(&c))
    };
    let mut classes: Vec<Vec<usize>> = Vec::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    for (k, c) in conds.iter().enumerate() {
        let (Expr::Bin(a, BinOp::Eq, b), false) = (&c.expr, c.lifted) else {
            continue;
        };
        let (Expr::Col(a), Expr::Col(b)) = (&**a, &**b) else {
            continue;
        };
        if leaf_of(*a) == leaf_of(*b) {
            continue;
        }
        let ia = classes.iter().position(|x| x.contains(a));
        let ib = classes.iter().position(|x| x.contains(b));
        match (ia, ib) {
            (Some(i), Some(j)) if i == j => members[i].push(k),
            (Some(i), Some(j)) => {
                let (lo, hi) = (i.min(j), i.max(j));
                let moved = classes.remove(hi);
                let more = members.remove(hi);
                classes[lo].extend(moved);
                members[lo].extend(more);
                members[lo].push(k);
            }
            (Some(i), None) => {
                classes[i].push(*b);
                members[i].push(k);
            }
            (None, Some(j)) => {
                classes[j].push(*a);
                members[j].push(k);
            }
            (None, None) => {
                classes.push(vec![*a, *b]);
                members.push(vec![k]);
            }
        }
    }
    for (id, (cols, ks)) in classes.iter().zip(&members).enumerate() {
        let mut spanned = 0u64;
        for &c in cols {
            spanned |= leaf_of(c).map_or(0, |i| 1 << i);
        }
        // A leaf with two columns of the class (`a.x = b.y AND a.w = b.y`) is
        // left as written: a join applying one of its equalities would not
        // imply the other.
        if spanned.count_ones() < 3 || (spanned.count_ones() as usize) < cols.len() {
            continue;
        }
        for &k in ks {
            conds[k].class = Some(id);
        }
        for (i, &x) in cols.iter().enumerate() {
            for &y in &cols[i + 1..] {
                let (Some(lx), Some(ly)) = (leaf_of(x), leaf_of(y)) else {
                    continue;
                };
                let mask = (1u64 << lx) | (1u64 << ly);
                if lx == ly || conds.iter().any(|c| c.class == Some(id) && c.mask == mask) {
                    continue;
                }
                conds.push(Cond {
                    expr: Expr::Bin(Box::new(Expr::Col(x)), BinOp::Eq, Box::new(Expr::Col(y))),
                    mask,
                    lifted: false,
                    class: Some(id),
                    derived: true,
                });
            }
        }
    }
}

/// Whether a condition joins `a` to `b`, and how many of those are equalities
/// (a hash join's keys).
fn joins(a: u64, b: u64, conds: &[Cond]) -> (bool, usize) {
    let mut any = (false, 0);
    for c in conds {
        let m = c.mask;
        if m & a != 0 && m & b != 0 && m & !(a | b) == 0 {
            any.0 = true;
            any.1 += usize::from(matches!(&c.expr, Expr::Bin(_, BinOp::Eq, _)));
        }
    }
    any
}

/// Join order rules 5 and 9: the cost of joining two parts and how: the least
/// of a hash join on their `keys` equalities (a nested loop without one) and an
/// index probe per row of one part into the other where that is one leaf with an
/// index on a condition between them. With `Method::Probe`, `swap` says the
/// first part is the one probed.
fn join_cost(
    (l, ml): (&Best, u64),
    (r, mr): (&Best, u64),
    (rows, keys): (f64, usize),
    s: &Search<'_, '_>,
) -> (Split, Method, bool) {
    let u = &s.u;
    let (o, i) = if l.rows >= r.rows { (l, r) } else { (r, l) };
    // Per outer row (shared among the workers) and for the inner side (built by
    // each of them).
    let (per_outer, build) = if keys > 0 {
        let k = keys as f64;
        (
            o.rows * u.cpu_operator * k + 0.5 * u.cpu_operator * k * o.rows.max(rows),
            i.rows * (u.cpu_operator * k + u.cpu_tuple),
        )
    } else {
        (
            o.rows * i.rows * (u.cpu_tuple + 2.0 * u.cpu_operator),
            2.0 * u.cpu_operator * i.rows,
        )
    };
    // Parallel rule 7: a hash join's inner side driven by a large table's scan
    // is built by the workers together (its driving scan and the work per row
    // of it shared); any other is built whole by each.
    let shared = keys > 0 && i.split.driver >= f64::from(crate::parallel::MIN_PAGES);
    let (together, alone) = match shared {
        true => (i.split.spine, 0.0),
        false => (0.0, i.split.spine),
    };
    let keyed = Split {
        spine: o.split.spine + per_outer + rows * u.cpu_tuple + together,
        whole: o.split.whole + alone + i.split.whole + build,
        driver: o.split.driver,
    };
    let mut probe: Option<(Split, bool)> = None;
    for ((o, mo), mi, swap) in [((l, ml), mr, false), ((r, mr), ml, true)] {
        if mi.count_ones() != 1 {
            continue;
        }
        let leaf = &s.leaves[mi.trailing_zeros() as usize];
        for p in leaf.probes.iter().filter(|p| p.outer & !mo == 0) {
            // PostgreSQL's get_loop_count: the runs whose fetches share pages
            // are the fewest rows of a leaf the probe's key reads.
            let loops = (0..s.leaves.len())
                .filter(|k| p.outer & (1 << k) != 0)
                .map(|k| s.leaves[k].rows)
                .fold(f64::INFINITY, f64::min)
                .clamp(1.0, f64::MAX);
            let split = Split {
                spine: o.split.spine + o.rows * p.cost(leaf.base, u, loops) + rows * u.cpu_tuple,
                ..o.split
            };
            if probe.is_none_or(|(c, _)| split.cost(s) < c.cost(s)) {
                probe = Some((split, swap));
            }
        }
    }
    match probe {
        Some((split, swap)) if s.forced || split.cost(s) < keyed.cost(s) => {
            (split, Method::Probe, swap)
        }
        _ => (keyed, Method::Keyed, false),
    }
}

/// The tree of joining `a` and `b` as `join_cost` chose.
fn joined(a: &Tree, b: &Tree, (method, swap): (Method, bool)) -> Tree {
    let (a, b) = (Box::new(a.clone()), Box::new(b.clone()));
    match swap {
        true => Tree::Join(b, a, method),
        false => Tree::Join(a, b, method),
    }
}

/// Join order rule 9: each table leaf's probes — an equality of one of its
/// columns, the first of one of its indexes, with an expression over other leaves
/// — and the rows each probe fetches (the equality's selectivity of its rows).
fn probe_paths(leaves: &mut [Leaf<'_>], conds: &[Cond], sizes: &Sizes<'_>, rels: &Relations<'_>) {
    let sw = rels.switches();
    if !sw.nestloop || !sw.indexscan {
        return;
    }
    let plain = |e: &Expr| crate::bind::engine_free(e) && !has_outer(e);
    for i in 0..leaves.len() {
        let l = &leaves[i];
        let Rel::Table { name, .. } = l.rel else {
            continue;
        };
        let Ok(Some(entry)) = rels.entry(name) else {
            continue;
        };
        if !l.conjs.iter().all(plain) {
            continue;
        }
        let im = 1u64 << i;
        let inside = |c: usize| (l.offset..l.offset + l.width).contains(&c);
        let index_on = |c: usize| entry.indexes.iter().find(|x| x.columns.first() == Some(&c));
        let pages = sizes.scan(name, []).map_or(0.0, |(_, p, _)| p);
        let filter_ops: f64 = l.conjs.iter().map(crate::cost::ops).sum();
        let mut found = Vec::new();
        for c in conds
            .iter()
            .filter(|c| !c.lifted && c.mask & im != 0 && c.mask != im)
        {
            let Expr::Bin(x, BinOp::Eq, y) = &c.expr else {
                continue;
            };
            let other = |e: &Expr| leaf_mask(e, leaves) & im == 0 && plain(e);
            let col = match (&**x, &**y) {
                (Expr::Col(a), e) | (e, Expr::Col(a)) if inside(*a) && other(e) => *a,
                _ => continue,
            };
            let Some(index) = index_on(col - l.offset) else {
                continue;
            };
            let outer = c.mask & !im;
            let sel = if outer.count_ones() == 1 {
                let o = &leaves[outer.trailing_zeros() as usize];
                sizes.join_sel(
                    std::iter::once(&c.expr),
                    (l.rel, l.offset, l.width),
                    (o.rel, o.offset, o.width),
                )
            } else {
                estimate::DEFAULT_EQ_SEL
            };
            found.push(Probe {
                outer,
                fetched: sel * l.base,
                pages,
                corr2: sizes.index_correlation(name, &index.name).powi(2),
                filter_ops,
            });
        }
        leaves[i].probes = found;
    }
}

/// A leaf as a part of the search: its scan the driving one.
fn leaf_best(i: usize, l: &Leaf<'_>, s: &Search<'_, '_>) -> Best {
    let split = Split {
        spine: l.cost,
        whole: 0.0,
        driver: l.pages,
    };
    Best {
        cost: split.cost(s),
        split,
        rows: l.rows,
        tree: Tree::Leaf(i),
    }
}

fn exhaustive(s: &Search<'_, '_>) -> Best {
    let n = s.leaves.len();
    let full = (1u64 << n) - 1;
    let mut best: Vec<Option<Best>> = vec![None; 1 << n];
    for (i, l) in s.leaves.iter().enumerate() {
        best[1 << i] = Some(leaf_best(i, l, s));
    }
    for mask in 1..=full {
        if mask.count_ones() < 2 {
            continue;
        }
        let rows = rows_of(mask, s.leaves, s.conds, s.sel);
        let low = mask & mask.wrapping_neg();
        let mut found: Option<Best> = None;
        // Joins with a condition first; cross products only where none is.
        for cross in [false, true] {
            let mut a = (mask - 1) & mask;
            while a > 0 {
                let b = mask & !a;
                // Each split once, `a` holding the lowest leaf.
                if a & low == 0 {
                    a = (a - 1) & mask;
                    continue;
                }
                let (linked, keys) = joins(a, b, s.conds);
                if let (Some(l), Some(r)) = (&best[a as usize], &best[b as usize]) {
                    if linked != cross {
                        let (split, method, swap) = join_cost((l, a), (r, b), (rows, keys), s);
                        let cost = split.cost(s);
                        if found.as_ref().is_none_or(|f| cost < f.cost) {
                            found = Some(Best {
                                cost,
                                split,
                                rows,
                                // The side with the lowest leaf first: ties keep
                                // the query's order.
                                tree: joined(&l.tree, &r.tree, (method, swap)),
                            });
                        }
                    }
                }
                a = (a - 1) & mask;
            }
            if found.is_some() {
                break;
            }
        }
        best[mask as usize] = found;
    }
    best[full as usize]
        .clone()
        .expect("every set of leaves has a join order")
}

fn greedy(s: &Search<'_, '_>) -> Best {
    let mut parts: Vec<(u64, Best)> = s
        .leaves
        .iter()
        .enumerate()
        .map(|(i, l)| (1u64 << i, leaf_best(i, l, s)))
        .collect();
    while parts.len() > 1 {
        // Linked by a condition, its cost, the two parts, how they join.
        type Pick = (bool, Split, usize, usize, (Method, bool));
        let mut pick: Option<Pick> = None;
        for i in 0..parts.len() {
            for k in i + 1..parts.len() {
                let (linked, keys) = joins(parts[i].0, parts[k].0, s.conds);
                let rows = rows_of(parts[i].0 | parts[k].0, s.leaves, s.conds, s.sel);
                let (pi, pk) = (&parts[i], &parts[k]);
                let (split, method, swap) =
                    join_cost((&pi.1, pi.0), (&pk.1, pk.0), (rows, keys), s);
                let better = pick.as_ref().is_none_or(|&(pl, pc, ..)| {
                    (linked && !pl) || (linked == pl && split.cost(s) < pc.cost(s))
                });
                if better {
                    pick = Some((linked, split, i, k, (method, swap)));
                }
            }
        }
        let (_, split, i, k, how) = pick.expect("two parts at least");
        let (mk, bk) = parts.remove(k);
        let (mi, bi) = parts.remove(i);
        let mask = mi | mk;
        parts.push((
            mask,
            Best {
                cost: split.cost(s),
                split,
                rows: rows_of(mask, s.leaves, s.conds, s.sel),
                tree: joined(&bi.tree, &bk.tree, how),
            },
        ));
    }
    parts.pop().expect("one part").1
}

fn tree_mask(t: &Tree) -> u64 {
    match t {
        Tree::Leaf(i) => 1 << i,
        Tree::Join(a, b, _) => tree_mask(a) | tree_mask(b),
    }
}

/// The plan of `t` and its row's layout: the tree-row column at each position.
fn build(
    t: &Tree,
    (leaves, conds, sel, keep): (&[Leaf<'_>], &[Cond], &[f64], &[bool]),
    done: &mut Built,
    rels: &Relations<'_>,
) -> SqlResult<(Plan, Vec<usize>)> {
    let (a, b, m) = match t {
        Tree::Leaf(i) => match done.plans[*i].take() {
            Some(p) => return Ok(p),
            None => return leaf_plan(&leaves[*i], keep, rels),
        },
        Tree::Join(a, b, m) => (a, b, m),
    };
    if *m == Method::Probe {
        if let Some(p) = index_nested_loop((a, b), (leaves, conds, sel, keep), done, rels)? {
            return Ok(p);
        }
    }
    let (pa, la) = build(a, (leaves, conds, sel, keep), done, rels)?;
    let (pb, lb) = build(b, (leaves, conds, sel, keep), done, rels)?;
    // The smaller side in bytes (rows by columns) is built (hashed or
    // materialized): the inner.
    let bytes =
        |t: &Tree, cols: usize| rows_of(tree_mask(t), leaves, conds, sel) * (cols + 1) as f64;
    let ((outer, lo), (inner, li)) = if bytes(b, lb.len()) <= bytes(a, la.len()) {
        ((pa, la), (pb, lb))
    } else {
        ((pb, lb), (pa, la))
    };
    let mask = tree_mask(a) | tree_mask(b);
    let (layout, here) = conds_at(conds, &mut done.used, mask, (&lo, &li));
    let widths = (lo.len(), li.len());
    let p = planner::keyed_join(JoinKind::Inner, (outer, inner), here, (widths, rels))?;
    let lifted = lifted_at(conds, &mut done.used, mask);
    Ok((tested_whole(p, &layout, lifted, leaves), layout))
}

/// Join order rule 10: the mask of the one leaf a correlated subquery's
/// conjunct `c` reads (its own columns and its subqueries' outer references), if
/// it reads one and only columns of the tree's row.
fn lifted_mask(c: &Expr, leaves: &[Leaf<'_>], width: usize) -> Option<u64> {
    if !planner::has_correlated(c) {
        return None;
    }
    let mut cols = Vec::new();
    planner::correlated_columns(c, &mut cols);
    crate::privileges::expr_columns(c, &mut cols);
    if cols.iter().any(|&x| x >= width) {
        return None;
    }
    let mut mask = 0u64;
    for x in cols {
        let i = leaves
            .iter()
            .position(|l| (l.offset..l.offset + l.width).contains(&x))?;
        mask |= 1 << i;
    }
    (mask.count_ones() == 1).then_some(mask)
}

/// The lifted conjuncts not yet used whose leaf is in `mask`; marks them used.
fn lifted_at(conds: &[Cond], used: &mut [bool], mask: u64) -> Vec<Expr> {
    let mut out = Vec::new();
    for (k, c) in conds.iter().enumerate() {
        if c.lifted && !used[k] && c.mask & mask == c.mask {
            used[k] = true;
            out.push(c.expr.clone());
        }
    }
    out
}

/// `p` (rows laid out as `layout`) filtered by `conds` over the tree's row
/// (join order rule 10): each row put in the tree's layout (the columns of other
/// leaves NULL) for the test, then back.
fn tested_whole(p: Plan, layout: &[usize], conds: Vec<Expr>, leaves: &[Leaf<'_>]) -> Plan {
    let Some(cond) = planner::and_all(conds) else {
        return p;
    };
    let width = leaves.iter().map(|l| l.offset + l.width).max().unwrap_or(0);
    let whole = restore(p, layout, width);
    Plan::Project {
        input: Box::new(Plan::Filter {
            input: Box::new(whole),
            cond,
        }),
        exprs: layout.iter().map(|&c| Expr::Col(c)).collect(),
    }
}

/// Join order rule 9: `inner`, a table leaf with an index on a column that a
/// condition equates with an expression over `outer`, read by an index probe per
/// outer row (a nested loop whose inner scan's index condition reads the outer row:
/// PostgreSQL's parameterized index scan), as the search chose (`join_cost`);
/// None where no index serves after all.
fn index_nested_loop(
    (outer, inner): (&Tree, &Tree),
    (leaves, conds, sel, keep): (&[Leaf<'_>], &[Cond], &[f64], &[bool]),
    done: &mut Built,
    rels: &Relations<'_>,
) -> SqlResult<Option<(Plan, Vec<usize>)>> {
    let Tree::Leaf(i) = inner else {
        return Ok(None);
    };
    if !rels.switches().nestloop || !rels.switches().indexscan {
        // Planner rule 8.
        return Ok(None);
    }
    let l = &leaves[*i];
    // The inner side runs one nesting level down (its outer row is the loop's), so
    // a filter that reads an enclosing query's row (a correlated subquery's leaf)
    // or holds a subquery stays with the other methods.
    let plain = |e: &Expr| crate::bind::engine_free(e) && !has_outer(e);
    if !matches!(l.rel, Rel::Table { .. }) || !l.conjs.iter().all(plain) {
        return Ok(None);
    }
    let (om, im) = (tree_mask(outer), 1u64 << i);
    let inside = |c: usize| (l.offset..l.offset + l.width).contains(&c);
    // The unused equalities `inner column = expression over the outer side`: all
    // go to the inner scan, so an index over several of its columns serves them.
    let eqs: Vec<(usize, usize, Expr)> = conds
        .iter()
        .enumerate()
        .filter_map(|(k, c)| {
            if done.used[k] || c.mask & !(om | im) != 0 || c.mask & im == 0 || c.mask & om == 0 {
                return None;
            }
            let Expr::Bin(x, BinOp::Eq, y) = &c.expr else {
                return None;
            };
            let over_outer = |e: &Expr| leaf_mask(e, leaves) & !om == 0 && plain(e);
            match (&**x, &**y) {
                (Expr::Col(c), e) if inside(*c) && over_outer(e) => Some((k, *c, e.clone())),
                (e, Expr::Col(c)) if inside(*c) && over_outer(e) => Some((k, *c, e.clone())),
                _ => None,
            }
        })
        .collect();
    // Join order rule 12: one probe key per class of equal columns; the other
    // equalities of the class are implied by it (marked used once the probe is).
    let mut implied = Vec::new();
    let mut eqs = eqs;
    let mut seen = Vec::new();
    eqs.retain(|(k, ..)| match conds[*k].class {
        Some(c) if seen.contains(&c) => {
            implied.push(*k);
            false
        }
        Some(c) => {
            seen.push(c);
            true
        }
        None => true,
    });
    if eqs.is_empty() {
        return Ok(None);
    }
    let saved = done.used.clone();
    let (po, lo) = build(outer, (leaves, conds, sel, keep), done, rels)?;
    // Each probe's key: the outer expression over the outer row, read as the row
    // the nested loop runs the inner scan for (level 1).
    let mut conjs = l.conjs.clone();
    for (_, col, other) in &eqs {
        let key = as_outer(remap(other.clone(), &lo));
        conjs.push(Expr::Bin(
            Box::new(Expr::Col(col - l.offset)),
            BinOp::Eq,
            Box::new(key),
        ));
    }
    let scan = planner::rel(l.rel, conjs.clone(), rels)?;
    if !probes(&scan) {
        // No index serves the probe: the join is planned the other ways, the outer
        // side's conditions not taken.
        done.used = saved;
        return Ok(None);
    }
    let (pi, li) = leaf_plan_of(scan, l, &conjs, keep, rels);
    for k in eqs.iter().map(|e| e.0).chain(implied) {
        done.used[k] = true;
    }
    let (layout, here) = conds_at(conds, &mut done.used, om | im, (&lo, &li));
    let p = Plan::Lateral {
        kind: JoinKind::Inner,
        outer: Box::new(po),
        inner: Box::new(pi),
        cond: planner::and_all(here),
        widths: (lo.len(), li.len()),
    };
    Ok(Some((p, layout)))
}

/// The joined row's layout (`lo` then `li`) and the conditions not yet used whose
/// leaves are all in `mask`, over that layout (join order rule 2); marks them used.
fn conds_at(
    conds: &[Cond],
    used: &mut [bool],
    mask: u64,
    (lo, li): (&[usize], &[usize]),
) -> (Vec<usize>, Vec<Expr>) {
    let mut layout = lo.to_vec();
    layout.extend(li);
    let mut here = Vec::new();
    // Join order rule 12: one equality of a class per join (the first: the
    // query's own before a derived one); the others are implied.
    let mut applied = Vec::new();
    for (k, c) in conds.iter().enumerate() {
        if !used[k] && !c.lifted && c.mask & mask == c.mask {
            used[k] = true;
            if let Some(class) = c.class {
                if applied.contains(&class) {
                    continue;
                }
                applied.push(class);
            }
            here.push(remap(c.expr.clone(), &layout));
        }
    }
    (layout, here)
}

/// `e` with each column read from the outer row of a nested loop's inner side.
fn as_outer(e: Expr) -> Expr {
    match e {
        Expr::Col(c) => Expr::Outer(1, c),
        e => e
            .map_children(&mut |x| Ok(as_outer(x)))
            .expect("rewriting never fails"),
    }
}

/// Whether `p` reads through an index whose condition reads the outer row.
fn probes(p: &Plan) -> bool {
    match p {
        Plan::Filter { input, .. } => probes(input),
        Plan::IndexScan { path, .. } => path.conds().iter().any(|(_, _, e)| {
            matches!(e, Expr::Outer(..)) || !crate::bind::uses_columns(e) && has_outer(e)
        }),
        _ => false,
    }
}

fn has_outer(e: &Expr) -> bool {
    let mut todo = vec![e];
    while let Some(e) = todo.pop() {
        if matches!(e, Expr::Outer(..)) {
            return true;
        }
        e.children(&mut todo);
    }
    false
}

/// Join order rule 7: the tree-row columns anything above a leaf's scan reads —
/// the query above (`needed`; all when not known) and the join conditions.
fn kept_columns(width: usize, needed: Option<&[bool]>, conds: &[Cond], top: &[Expr]) -> Vec<bool> {
    let mut keep = match needed {
        Some(n) if n.len() == width => n.to_vec(),
        _ => return vec![true; width],
    };
    let mut cols = Vec::new();
    for e in conds.iter().map(|c| &c.expr).chain(top) {
        planner::correlated_columns(e, &mut cols);
        crate::privileges::expr_columns(e, &mut cols);
    }
    for c in cols {
        if let Some(k) = keep.get_mut(c) {
            *k = true;
        }
    }
    keep
}

/// A leaf's scan, projected to the columns kept (join order rule 7), and its layout.
fn leaf_plan(l: &Leaf<'_>, keep: &[bool], rels: &Relations<'_>) -> SqlResult<(Plan, Vec<usize>)> {
    let p = planner::rel(l.rel, l.conjs.clone(), rels)?;
    Ok(leaf_plan_of(p, l, &l.conjs, keep, rels))
}

/// [`leaf_plan`] of the leaf's planned scan `p`.
fn leaf_plan_of(
    p: Plan,
    l: &Leaf<'_>,
    conjs: &[Expr],
    keep: &[bool],
    rels: &Relations<'_>,
) -> (Plan, Vec<usize>) {
    let all: Vec<usize> = (l.offset..l.offset + l.width).collect();
    let kept: Vec<usize> = all.iter().copied().filter(|&c| keep[c]).collect();
    if kept.len() == all.len() {
        return (p, all);
    }
    // The scan decodes what is kept and what its filter reads (cursor rule 5);
    // all of it where the filter holds a subquery (whose reads are not followed).
    if conjs.iter().any(|c| !crate::bind::engine_free(c)) {
        let exprs = kept.iter().map(|&c| Expr::Col(c - l.offset)).collect();
        let p = Plan::Project {
            input: Box::new(p),
            exprs,
        };
        return (p, kept);
    }
    let mut read: Vec<bool> = all.iter().map(|&c| keep[c]).collect();
    let mut cols = Vec::new();
    for c in conjs {
        crate::privileges::expr_columns(c, &mut cols);
    }
    for c in cols {
        if let Some(r) = read.get_mut(c) {
            *r = true;
        }
    }
    let p = planner::read_only(p, Some(read), rels);
    let exprs = kept.iter().map(|&c| Expr::Col(c - l.offset)).collect();
    let p = Plan::Project {
        input: Box::new(p),
        exprs,
    };
    (p, kept)
}

/// `e` over the tree's row rewritten over a row laid out as `layout`.
fn remap(e: Expr, layout: &[usize]) -> Expr {
    match e {
        Expr::Col(c) => Expr::Col(layout.iter().position(|&x| x == c).unwrap_or(c)),
        e => e
            .map_children(&mut |x| Ok(remap(x, layout)))
            .expect("remapping never fails"),
    }
}

/// Join order rule 6: the row back in the tree's layout, a column no one reads
/// (rule 7) as NULL.
fn restore(p: Plan, layout: &[usize], width: usize) -> Plan {
    if layout.iter().copied().eq(0..width) {
        return p;
    }
    let exprs = (0..width)
        .map(|c| match layout.iter().position(|&x| x == c) {
            Some(i) => Expr::Col(i),
            None => Expr::Const(crate::Datum::Null),
        })
        .collect();
    Plan::Project {
        input: Box::new(p),
        exprs,
    }
}
