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
//!    Cost: the rows each join reads and makes.
//! 6. The finished row is put back in the tree's layout (a projection), so nothing
//!    above the join sees the order chosen.
//! 7. Each leaf's scan is projected to the columns read above it (by the query, as
//!    the planner found them, or by a join condition); the others are NULL in the
//!    finished row, so a hash table holds only what is read; a correlated
//!    subquery above counts the columns of the row it reads as outer references.
//! 8. An OR over several leaves also filters each leaf that every arm restricts, by
//!    the OR of the arms' conjuncts over it ([`or_restrictions`]).
//! 9. A join of a table leaf whose index serves an equality with the other side
//!    is a nested loop probing that index once per outer row (PostgreSQL's
//!    parameterized index scan) when outer rows × ([`PROBE_ROWS`] + rows per probe)
//!    is below what hashing costs (the table's rows scanned, both sides' rows
//!    hashed or probed); the inner scan's index condition reads the outer row
//!    ([`index_nested_loop`]). The order search weighs the same choice at each
//!    join of one leaf ([`join_cost`]), each leaf costing its scan's rows, so an
//!    order that reaches a large table through its index is found.
//! 10. A WHERE conjunct with a correlated subquery that reads one leaf (its own
//!     columns and the subquery's outer references) is tested at the first join
//!     above that leaf, not after the last: the joins that shrink the leaf's rows
//!     come first, and the test runs where parallel workers run the join. The
//!     subquery's outer references index the tree's row, so the joined row is put
//!     in that layout for the test ([`tested_whole`]). One over several leaves
//!     stays above the whole tree.

use crate::analyze::{JoinKind, Rel};
use crate::bind::{BinOp, Expr};
use crate::estimate::{self, Sizes};
use crate::planner::{self, Plan, Relations};
use crate::SqlResult;

/// Join order rule 4: leaves searched exhaustively.
pub(crate) const EXHAUSTIVE: usize = 10;

/// Join order rule 9: what one index probe of a nested loop costs, in rows a
/// hash join reads (a row scanned, then hashed or probed: ~0.17 µs). Measured, not
/// PostgreSQL's: at TPC-H scale 1, 227,597 orders probing `lineitem_pkey` took
/// 1.03 s (4.5 µs a probe finding four rows, one worker) where scanning `lineitem`
/// took 0.48 s and hash-joining it with those orders 1.45 s.
const PROBE_ROWS: f64 = 25.0;

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
}

/// A join condition over the tree's row and the leaves it reads.
struct Cond {
    expr: Expr,
    mask: u64,
    /// Join order rule 10: a correlated subquery's conjunct over one leaf, tested
    /// at the first join above it over the tree's row.
    lifted: bool,
}

/// How a set of leaves is joined (the search's result).
#[derive(Clone, Debug)]
enum Tree {
    Leaf(usize),
    Join(Box<Tree>, Box<Tree>),
}

#[derive(Clone)]
struct Best {
    cost: f64,
    rows: f64,
    tree: Tree,
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
            });
        }
    }
    let sizes = Sizes::new(rels);
    for l in &mut leaves {
        l.rows = sizes.rel_rows(l.rel, &l.conjs);
        l.base = sizes.rel_rows(l.rel, &[]);
    }
    let sel = selectivities(&leaves, &conds, &sizes);
    probe_paths(&mut leaves, &conds, &sizes, rels);
    let best = if leaves.len() <= EXHAUSTIVE {
        exhaustive(&leaves, &conds, &sel)
    } else {
        greedy(&leaves, &conds, &sel)
    };
    let keep = kept_columns(width, needed, &conds, &top);
    let mut used = vec![false; conds.len()];
    let (p, layout) = build(&best.tree, (&leaves, &conds, &sel, &keep), &mut used, rels)?;
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

/// Estimated rows of the leaves in `mask` joined.
fn rows_of(mask: u64, leaves: &[Leaf<'_>], conds: &[Cond], sel: &[f64]) -> f64 {
    let mut rows: f64 = (0..leaves.len())
        .filter(|i| mask & (1 << i) != 0)
        .map(|i| leaves[i].rows)
        .product();
    for (c, s) in conds.iter().zip(sel) {
        if c.mask & mask == c.mask {
            rows *= s;
        }
    }
    rows.max(1.0)
}

/// Whether a condition joins `a` to `b`, and whether one of those is an equality.
fn joins(a: u64, b: u64, conds: &[Cond]) -> (bool, bool) {
    let mut any = (false, false);
    for c in conds {
        let m = c.mask;
        if m & a != 0 && m & b != 0 && m & !(a | b) == 0 {
            any.0 = true;
            any.1 |= matches!(&c.expr, Expr::Bin(_, crate::bind::BinOp::Eq, _));
        }
    }
    any
}

/// Join order rules 5 and 9: the cost of joining two sides of these sizes (each
/// leaf's cost its scan's rows), the least of a hash join (or nested loop) and an
/// index probe per row of one side into the other where that is one leaf with an
/// index on a condition between them.
fn join_cost(
    (l, ml): (&Best, u64),
    (r, mr): (&Best, u64),
    (rows, hashed): (f64, bool),
    leaves: &[Leaf<'_>],
) -> f64 {
    let work = if hashed {
        l.rows + r.rows
    } else {
        l.rows * r.rows
    };
    let mut cost = l.cost + r.cost + work + rows;
    for ((o, mo), mi) in [((l, ml), mr), ((r, mr), ml)] {
        if mi.count_ones() != 1 {
            continue;
        }
        let leaf = &leaves[mi.trailing_zeros() as usize];
        for p in leaf.probes.iter().filter(|p| p.outer & !mo == 0) {
            cost = cost.min(o.cost + o.rows * (PROBE_ROWS + p.fetched) + rows);
        }
    }
    cost
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
        let indexed = |c: usize| entry.indexes.iter().any(|x| x.columns.first() == Some(&c));
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
            if !indexed(col - l.offset) {
                continue;
            }
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
            });
        }
        leaves[i].probes = found;
    }
}

fn exhaustive(leaves: &[Leaf<'_>], conds: &[Cond], sel: &[f64]) -> Best {
    let n = leaves.len();
    let full = (1u64 << n) - 1;
    let mut best: Vec<Option<Best>> = vec![None; 1 << n];
    for (i, l) in leaves.iter().enumerate() {
        best[1 << i] = Some(Best {
            cost: l.base,
            rows: l.rows,
            tree: Tree::Leaf(i),
        });
    }
    for mask in 1..=full {
        if mask.count_ones() < 2 {
            continue;
        }
        let rows = rows_of(mask, leaves, conds, sel);
        let low = mask & mask.wrapping_neg();
        let mut found: Option<Best> = None;
        // Joins with a condition first; cross products only where none is.
        for cross in [false, true] {
            let mut s = (mask - 1) & mask;
            while s > 0 {
                let t = mask & !s;
                // Each split once, `s` holding the lowest leaf.
                if s & low == 0 {
                    s = (s - 1) & mask;
                    continue;
                }
                let (linked, hashed) = joins(s, t, conds);
                if let (Some(l), Some(r)) = (&best[s as usize], &best[t as usize]) {
                    if linked != cross {
                        let cost = join_cost((l, s), (r, t), (rows, hashed), leaves);
                        if found.as_ref().is_none_or(|f| cost < f.cost) {
                            found = Some(Best {
                                cost,
                                rows,
                                // The side with the lowest leaf first: ties keep
                                // the query's order.
                                tree: Tree::Join(
                                    Box::new(l.tree.clone()),
                                    Box::new(r.tree.clone()),
                                ),
                            });
                        }
                    }
                }
                s = (s - 1) & mask;
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

fn greedy(leaves: &[Leaf<'_>], conds: &[Cond], sel: &[f64]) -> Best {
    let mut parts: Vec<(u64, Best)> = leaves
        .iter()
        .enumerate()
        .map(|(i, l)| {
            (
                1u64 << i,
                Best {
                    cost: l.base,
                    rows: l.rows,
                    tree: Tree::Leaf(i),
                },
            )
        })
        .collect();
    while parts.len() > 1 {
        let mut pick: Option<(bool, f64, usize, usize)> = None;
        for i in 0..parts.len() {
            for k in i + 1..parts.len() {
                let (linked, hashed) = joins(parts[i].0, parts[k].0, conds);
                let rows = rows_of(parts[i].0 | parts[k].0, leaves, conds, sel);
                let (pi, pk) = (&parts[i], &parts[k]);
                let cost = join_cost((&pi.1, pi.0), (&pk.1, pk.0), (rows, hashed), leaves);
                let better = pick
                    .is_none_or(|(pl, pc, _, _)| (linked && !pl) || (linked == pl && cost < pc));
                if better {
                    pick = Some((linked, cost, i, k));
                }
            }
        }
        let (_, cost, i, k) = pick.expect("two parts at least");
        let (mk, bk) = parts.remove(k);
        let (mi, bi) = parts.remove(i);
        let mask = mi | mk;
        parts.push((
            mask,
            Best {
                cost,
                rows: rows_of(mask, leaves, conds, sel),
                tree: Tree::Join(Box::new(bi.tree), Box::new(bk.tree)),
            },
        ));
    }
    parts.pop().expect("one part").1
}

fn tree_mask(t: &Tree) -> u64 {
    match t {
        Tree::Leaf(i) => 1 << i,
        Tree::Join(a, b) => tree_mask(a) | tree_mask(b),
    }
}

/// The plan of `t` and its row's layout: the tree-row column at each position.
fn build(
    t: &Tree,
    (leaves, conds, sel, keep): (&[Leaf<'_>], &[Cond], &[f64], &[bool]),
    used: &mut [bool],
    rels: &Relations<'_>,
) -> SqlResult<(Plan, Vec<usize>)> {
    let (a, b) = match t {
        Tree::Leaf(i) => return leaf_plan(&leaves[*i], keep, rels),
        Tree::Join(a, b) => (a, b),
    };
    for (o, i) in [(a, b), (b, a)] {
        if let Some(p) = index_nested_loop((o, i), (leaves, conds, sel, keep), used, rels)? {
            return Ok(p);
        }
    }
    let (pa, la) = build(a, (leaves, conds, sel, keep), used, rels)?;
    let (pb, lb) = build(b, (leaves, conds, sel, keep), used, rels)?;
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
    let (layout, here) = conds_at(conds, used, mask, (&lo, &li));
    let widths = (lo.len(), li.len());
    let p = planner::keyed_join(JoinKind::Inner, (outer, inner), here, (widths, rels))?;
    let lifted = lifted_at(conds, used, mask);
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
/// PostgreSQL's parameterized index scan) when the probes are estimated to cost
/// less than hashing: outer rows × ([`PROBE_ROWS`] + rows a probe finds) against
/// the table's rows scanned and both sides' rows hashed or probed.
fn index_nested_loop(
    (outer, inner): (&Tree, &Tree),
    (leaves, conds, sel, keep): (&[Leaf<'_>], &[Cond], &[f64], &[bool]),
    used: &mut [bool],
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
            if used[k] || c.mask & !(om | im) != 0 || c.mask & im == 0 || c.mask & om == 0 {
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
    if eqs.is_empty() {
        return Ok(None);
    }
    let outer_rows = rows_of(om, leaves, conds, sel);
    // The rows a probe fetches: the least any of the leaf's probes from this outer
    // side finds (a condition sharing its selectivity with others has 1 of its own).
    let per_probe = l
        .probes
        .iter()
        .filter(|p| p.outer & !om == 0)
        .map(|p| p.fetched)
        .fold(l.base, f64::min)
        .min(eqs.iter().map(|e| sel[e.0]).product::<f64>() * l.base);
    // Planner rule 8: with sequential scans or hash joins off, probing is taken
    // whenever an index serves.
    let sw = rels.switches();
    let forced = !sw.seqscan || !sw.hashjoin;
    // Join order rule 9: against a hash join's scan of the leaf and its work.
    if !forced && outer_rows * (PROBE_ROWS + per_probe) >= l.base + l.rows + outer_rows {
        return Ok(None);
    }
    let saved = used.to_vec();
    let (po, lo) = build(outer, (leaves, conds, sel, keep), used, rels)?;
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
        used.copy_from_slice(&saved);
        return Ok(None);
    }
    let (pi, li) = leaf_plan_of(scan, l, &conjs, keep, rels);
    for (k, ..) in &eqs {
        used[*k] = true;
    }
    let (layout, here) = conds_at(conds, used, om | im, (&lo, &li));
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
    for (k, c) in conds.iter().enumerate() {
        if !used[k] && !c.lifted && c.mask & mask == c.mask {
            used[k] = true;
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
