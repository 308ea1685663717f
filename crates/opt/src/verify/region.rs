//! Output regions: the grid of boxes two programs' split points make, the
//! points Theorem 1 tests in each box, and the merging of differing boxes
//! into the regions a report lists.

use std::collections::BTreeMap;

/// A box of one output tensor: per dimension, `[lo, hi)`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Region {
    /// The output's position in the def's results.
    pub output: usize,
    pub ranges: Vec<(usize, usize)>,
}

impl Region {
    pub fn len(&self) -> usize {
        self.ranges.iter().map(|(lo, hi)| hi - lo).product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the element at `index` lies in the region.
    pub fn contains(&self, index: &[usize]) -> bool {
        self.ranges
            .iter()
            .zip(index)
            .all(|(&(lo, hi), &i)| lo <= i && i < hi)
    }

    /// `[0:1, 2:5]`, Python's slice notation.
    pub fn show(&self) -> String {
        let parts: Vec<String> = self
            .ranges
            .iter()
            .map(|(lo, hi)| format!("{lo}:{hi}"))
            .collect();
        format!("[{}]", parts.join(", "))
    }
}

/// The union of two lists of split points per dimension: the grid of box
/// intersections.
pub(crate) fn union(a: &[Vec<i64>], b: &[Vec<i64>]) -> Vec<Vec<i64>> {
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            let mut v: Vec<i64> = x.iter().chain(y).copied().collect();
            v.sort_unstable();
            v.dedup();
            v
        })
        .collect()
}

/// How many boxes a grid has (saturating).
pub(crate) fn count(grid: &[Vec<i64>]) -> usize {
    grid.iter()
        .map(|g| g.len().saturating_sub(1))
        .fold(1usize, usize::saturating_mul)
}

/// The boxes of a grid, the last dimension fastest; each is `[lo, hi)`
/// per dimension. A dimension of extent 0 has no boxes.
pub(crate) fn boxes(grid: &[Vec<i64>]) -> Vec<Vec<(i64, i64)>> {
    let mut out = vec![Vec::new()];
    for g in grid {
        let cells: Vec<(i64, i64)> = g.windows(2).map(|w| (w[0], w[1])).collect();
        out = out
            .into_iter()
            .flat_map(|b| {
                cells.iter().map(move |&c| {
                    let mut b = b.clone();
                    b.push(c);
                    b
                })
            })
            .collect();
    }
    out
}

/// The number of elements of a box (saturating).
pub(crate) fn size(b: &[(i64, i64)]) -> usize {
    b.iter()
        .map(|&(lo, hi)| (hi - lo) as usize)
        .fold(1usize, usize::saturating_mul)
}

/// Every element of a box, the last dimension fastest.
pub(crate) fn every(b: &[(i64, i64)]) -> Vec<Vec<i64>> {
    let grid: Vec<Vec<i64>> = b.iter().map(|&(lo, hi)| (lo..=hi).collect()).collect();
    boxes(&grid)
        .into_iter()
        .map(|c| c.iter().map(|r| r.0).collect())
        .collect()
}

/// Boxes of at most this many elements are tested at every element.
const SMALL_BOX: usize = 64;

/// Random points tested in each larger box.
const RANDOM_POINTS: usize = 2;

/// The points tested in a box: Theorem 1's low corner `v0` and `v0 + e_j`
/// for every dimension wider than one, every corner, and random points
/// drawn from `salt`; every element of a small box.
///
/// The theorem's lemma assumes that both programs step through their
/// inputs along the same directions, one output dimension per subscript;
/// mutants need not. `A(v) + A(5 - v)` and `A(2v - 1) + A(6 - 2v)` agree
/// at `v = 1, 2` and differ at 3; `X(i + j) + X(k)` and `X(i) + X(j + k)`
/// agree at `v0` and every `v0 + e_j` of the box `[0, 2)^3` and differ at
/// `(1, 1, 0)`. The other corners and the random points make such
/// coincidences unlikely to pass in large boxes, and small boxes, where a
/// coincidence covers most points, are tested whole.
pub(crate) fn points(b: &[(i64, i64)], salt: u64) -> Vec<Vec<i64>> {
    if size(b) <= SMALL_BOX {
        return every(b);
    }
    let v0: Vec<i64> = b.iter().map(|r| r.0).collect();
    let mut out = vec![v0.clone()];
    let add = |p: Vec<i64>, out: &mut Vec<Vec<i64>>| {
        if !out.contains(&p) {
            out.push(p);
        }
    };
    for (j, &(lo, hi)) in b.iter().enumerate() {
        if hi - lo > 1 {
            let mut v = v0.clone();
            v[j] += 1;
            add(v, &mut out);
        }
    }
    // Every corner, when there are not too many (2^m for m dimensions).
    let wide: Vec<usize> = (0..b.len()).filter(|&j| b[j].1 - b[j].0 > 1).collect();
    if wide.len() <= 10 {
        for mask in 1u32..1 << wide.len() {
            let mut v = v0.clone();
            for (bit, &j) in wide.iter().enumerate() {
                if mask >> bit & 1 == 1 {
                    v[j] = b[j].1 - 1;
                }
            }
            add(v, &mut out);
        }
    } else {
        add(b.iter().map(|r| r.1 - 1).collect(), &mut out);
    }
    for p in random_points(b, salt, RANDOM_POINTS) {
        add(p, &mut out);
    }
    out
}

/// `n` points of box `b` drawn uniformly (with repetition) from `salt`.
pub(crate) fn random_points(b: &[(i64, i64)], salt: u64, n: usize) -> Vec<Vec<i64>> {
    let mut state = salt;
    (0..n)
        .map(|_| {
            b.iter()
                .map(|&(lo, hi)| {
                    state = super::eval::mix(state.wrapping_add(0x9E37_79B9_7F4A_7C15));
                    lo + (state % (hi - lo) as u64) as i64
                })
                .collect()
        })
        .collect()
}

/// `[lo, hi)` along one dimension.
type Span = (usize, usize);

/// Merges disjoint regions that are adjacent along a dimension and agree
/// on every other one, until no two can merge; the result is sorted and
/// still disjoint, covering the same elements.
pub fn merge(mut regions: Vec<Region>) -> Vec<Region> {
    loop {
        let before = regions.len();
        // Outputs may differ in rank: a region without dimension `d` is
        // left alone while merging along it.
        let rank = regions.iter().map(|r| r.ranges.len()).max().unwrap_or(0);
        for d in (0..rank).rev() {
            // Group by everything but dimension `d`, then join runs.
            let mut groups: BTreeMap<(usize, Vec<Span>), Vec<Span>> = BTreeMap::new();
            let (mut lower, mut rest): (Vec<Region>, Vec<Region>) =
                regions.drain(..).partition(|r| r.ranges.len() <= d);
            regions.append(&mut lower);
            for r in rest.drain(..) {
                let mut key = r.ranges.clone();
                let span = key.remove(d);
                groups.entry((r.output, key)).or_default().push(span);
            }
            for ((output, key), mut spans) in groups {
                spans.sort_unstable();
                let mut joined: Vec<(usize, usize)> = Vec::new();
                for s in spans {
                    match joined.last_mut() {
                        Some(last) if last.1 == s.0 => last.1 = s.1,
                        _ => joined.push(s),
                    }
                }
                for s in joined {
                    let mut ranges = key.clone();
                    ranges.insert(d, s);
                    regions.push(Region { output, ranges });
                }
            }
        }
        if regions.len() == before {
            regions.sort();
            return regions;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(ranges: &[(usize, usize)]) -> Region {
        Region {
            output: 0,
            ranges: ranges.to_vec(),
        }
    }

    #[test]
    fn boxes_of_a_column_merge_into_the_column() {
        // Three boxes along rows, one column wide, and one elsewhere.
        let merged = merge(vec![
            region(&[(0, 1), (5, 6)]),
            region(&[(1, 6), (5, 6)]),
            region(&[(6, 7), (5, 6)]),
            region(&[(0, 1), (0, 1)]),
        ]);
        assert_eq!(
            merged,
            vec![region(&[(0, 1), (0, 1)]), region(&[(0, 7), (5, 6)])]
        );
    }

    #[test]
    fn regions_of_outputs_of_different_ranks_merge_separately() {
        let two = |output, ranges: &[(usize, usize)]| Region {
            output,
            ranges: ranges.to_vec(),
        };
        let merged = merge(vec![
            two(1, &[(0, 1)]),
            two(0, &[(0, 1), (0, 3)]),
            two(1, &[(1, 3)]),
            two(0, &[(1, 3), (0, 3)]),
        ]);
        assert_eq!(merged, vec![two(0, &[(0, 3), (0, 3)]), two(1, &[(0, 3)])]);
    }

    #[test]
    fn theorem_one_points_include_every_corner() {
        // 200 elements: Theorem 1's points, the other corners, random ones.
        let p = points(&[(2, 7), (0, 1), (3, 43)], 7);
        assert_eq!(&p[..3], [vec![2, 0, 3], vec![3, 0, 3], vec![2, 0, 4]]);
        for corner in [vec![6, 0, 3], vec![2, 0, 42], vec![6, 0, 42]] {
            assert!(p.contains(&corner), "{corner:?} missing from {p:?}");
        }
        assert!(
            p.len() <= 8
                && p.iter()
                    .all(|v| (2..7).contains(&v[0]) && v[1] == 0 && (3..43).contains(&v[2]))
        );
        // A small box is tested whole.
        assert_eq!(points(&[(0, 2), (0, 2), (0, 2)], 7).len(), 8);
        assert_eq!(boxes(&[vec![0, 1, 4], vec![0, 2]]).len(), 2);
        assert_eq!(count(&[vec![0, 1, 4], vec![0, 2, 3]]), 4);
    }
}
