//! The memory plan: which slot of memory holds each root buffer.
//!
//! Parameters, results and every buffer the caller sees get a slot of
//! their own. A temporary lives from the first step that touches it to the
//! last; temporaries whose lifetimes do not overlap share slots (first fit
//! over slots already freed, largest first), so a chain of layers needs the
//! memory of the two largest live temporaries, not of all of them.
//!
//! A buffer that is a view of another (`views[b]`: a reshape the runtime
//! does not copy) lives in that buffer's slot, which stays taken from the
//! first step that touches either to the last.
//!
//! Guarantees: two buffers that some step both touches are in different
//! slots unless one is a view of the other; every slot is at least as
//! large as every buffer in it.

use codegen::emit::{BufferInfo, StepInfo};

/// Where each root buffer lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The size in bytes of each slot.
    pub slot_bytes: Vec<usize>,
    /// For each root buffer, its slot.
    pub map: Vec<usize>,
}

impl Plan {
    /// Plans `buffers` for `steps`, run in order; `views[b]` names the
    /// buffer whose memory buffer `b` shares, itself no view.
    pub fn new(buffers: &[BufferInfo], steps: &[StepInfo], views: &[Option<usize>]) -> Plan {
        let n = buffers.len();
        let mut first = vec![usize::MAX; n];
        let mut last = vec![0usize; n];
        for (k, s) in steps.iter().enumerate() {
            for &b in s.reads.iter().chain(&s.writes) {
                // A view's uses keep the memory it shares alive.
                let owner = views.get(b).copied().flatten().unwrap_or(b);
                first[owner] = first[owner].min(k);
                last[owner] = last[owner].max(k);
            }
        }
        let bytes = |b: &BufferInfo| b.bytes.max(1);
        let mut plan = Plan {
            slot_bytes: Vec::new(),
            map: vec![usize::MAX; n],
        };
        // Temporaries by start of life, so a slot freed by an earlier one
        // can be taken by a later one.
        let is_view = |b: usize| views.get(b).copied().flatten().is_some();
        let mut temps: Vec<usize> = (0..n)
            .filter(|&b| buffers[b].temp && !is_view(b) && first[b] != usize::MAX)
            .collect();
        temps.sort_by_key(|&b| (first[b], std::cmp::Reverse(bytes(&buffers[b]))));
        // For each slot shared by temporaries: the last step of its current
        // occupant.
        let mut busy_until: Vec<Option<usize>> = Vec::new();
        for b in temps {
            let free = (0..plan.slot_bytes.len())
                .filter(|&s| busy_until[s].is_some_and(|end| end < first[b]))
                .max_by_key(|&s| plan.slot_bytes[s]);
            let s = match free {
                Some(s) => s,
                None => {
                    plan.slot_bytes.push(0);
                    busy_until.push(None);
                    plan.slot_bytes.len() - 1
                }
            };
            plan.slot_bytes[s] = plan.slot_bytes[s].max(bytes(&buffers[b]));
            busy_until[s] = Some(last[b]);
            plan.map[b] = s;
        }
        for (b, info) in buffers.iter().enumerate() {
            if plan.map[b] == usize::MAX && !is_view(b) {
                plan.slot_bytes.push(bytes(info));
                plan.map[b] = plan.slot_bytes.len() - 1;
            }
        }
        for (b, info) in buffers.iter().enumerate() {
            if let Some(owner) = views.get(b).copied().flatten() {
                let s = plan.map[owner];
                plan.slot_bytes[s] = plan.slot_bytes[s].max(bytes(info));
                plan.map[b] = s;
            }
        }
        plan
    }

    /// The bytes of all slots.
    pub fn total_bytes(&self) -> usize {
        self.slot_bytes.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ir::DType;
    use kernel::RefDir;

    fn buf(name: &str, len: usize, temp: bool) -> BufferInfo {
        BufferInfo {
            name: name.to_string(),
            dtype: DType::F32,
            len,
            bytes: len * 4,
            dir: if temp { RefDir::InOut } else { RefDir::In },
            temp,
            overwritten: false,
        }
    }

    fn step(reads: &[usize], writes: &[usize]) -> StepInfo {
        StepInfo {
            function: 0,
            args: Vec::new(),
            block: String::new(),
            comment: String::new(),
            parallel: None,
            reads: reads.to_vec(),
            writes: writes.to_vec(),
        }
    }

    #[test]
    fn a_chain_of_temporaries_reuses_memory() {
        // x -> t1 -> t2 -> t3 -> y: t1 and t3 can share a slot, t2 cannot
        // share with either.
        let buffers = [
            buf("x", 100, false),
            buf("t1", 100, true),
            buf("t2", 50, true),
            buf("t3", 80, true),
            buf("y", 10, false),
        ];
        let steps = [
            step(&[0], &[1]),
            step(&[1], &[2]),
            step(&[2], &[3]),
            step(&[3], &[4]),
        ];
        let plan = Plan::new(&buffers, &steps, &[]);
        assert_eq!(plan.map[1], plan.map[3]);
        assert_ne!(plan.map[1], plan.map[2]);
        assert_eq!(plan.total_bytes(), 4 * (100 + 100 + 50 + 10));
        for s in &steps {
            let mut slots: Vec<usize> = s
                .reads
                .iter()
                .chain(&s.writes)
                .map(|&b| plan.map[b])
                .collect();
            let n = slots.len();
            slots.sort_unstable();
            slots.dedup();
            assert_eq!(slots.len(), n, "a step touches two buffers in one slot");
        }
    }

    #[test]
    fn buffers_the_caller_sees_are_never_shared() {
        let buffers = [buf("x", 8, false), buf("y", 8, false)];
        let steps = [step(&[0], &[]), step(&[1], &[])];
        let plan = Plan::new(&buffers, &steps, &[]);
        assert_ne!(plan.map[0], plan.map[1]);
    }
}
