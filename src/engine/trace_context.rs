//! W3C trace context (`traceparent`) for what chassis asks of plugins.
//!
//! Why it exists: a plugin process logs and traces on its own; to tie its
//! spans to the run that caused them, every request chassis sends inside a
//! run carries `_meta.traceparent` (the MCP and OpenTelemetry convention).
//! The ids are derived, not random: a run's trace id is a hash of its run
//! id, and each request's parent id a hash of the run id and what the
//! request is, so the same run always names the same trace on every
//! machine, and an exporter can give chassis's own spans the same ids
//! later without keeping any state.

use sha2::{Digest, Sha256};

use super::canonical::hex_lower;

/// A `traceparent`: trace id, parent (span) id and trace flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceParent {
    /// 16 bytes, never all zero.
    pub trace_id: [u8; 16],
    /// 8 bytes, never all zero.
    pub parent_id: [u8; 8],
    /// Trace flags (`01`: sampled), kept as the caller sent them.
    pub flags: u8,
}

impl TraceParent {
    /// The trace of run `run_id`, with the parent span `span` names (what
    /// the request is, e.g. `tool:<call>`).
    #[must_use]
    pub fn of_run(run_id: &str, span: &str) -> Self {
        let trace = Sha256::new()
            .chain_update(b"chassis.trace.v1\0")
            .chain_update(run_id.as_bytes())
            .finalize();
        let parent = Sha256::new()
            .chain_update(b"chassis.span.v1\0")
            .chain_update(run_id.as_bytes())
            .chain_update([0])
            .chain_update(span.as_bytes())
            .finalize();
        let mut trace_id = [0; 16];
        trace_id.copy_from_slice(&trace[..16]);
        let mut parent_id = [0; 8];
        parent_id.copy_from_slice(&parent[..8]);
        // An all-zero id is invalid; a hash gives one with odds 2^-64.
        trace_id[15] |= u8::from(trace_id == [0; 16]);
        parent_id[7] |= u8::from(parent_id == [0; 8]);
        Self {
            trace_id,
            parent_id,
            flags: 1,
        }
    }

    /// The run's trace id alone, as 32 lowercase hex digits.
    #[must_use]
    pub fn trace_id_of(run_id: &str) -> String {
        hex_lower(&Self::of_run(run_id, "").trace_id)
    }

    /// `00-<trace id>-<parent id>-<flags>` (version 00, the one this
    /// code writes, whatever version it parsed).
    #[must_use]
    pub fn header(&self) -> String {
        format!(
            "00-{}-{}-{:02x}",
            hex_lower(&self.trace_id),
            hex_lower(&self.parent_id),
            self.flags
        )
    }

    /// A `traceparent` header as W3C Trace Context (level 1) defines it:
    /// `None` for anything else (an unknown version `ff`, upper-case hex,
    /// all-zero ids, wrong lengths).
    #[must_use]
    pub fn parse(header: &str) -> Option<Self> {
        let mut parts = header.trim().split('-');
        let (version, trace, parent, flags) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        // Version 00 has exactly four fields; a later one may add more.
        if (version == "00" && parts.next().is_some()) || version == "ff" {
            return None;
        }
        let hex = |s: &str, n: usize| {
            s.len() == n
                && s.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        if !hex(version, 2) || !hex(trace, 32) || !hex(parent, 16) || !hex(flags, 2) {
            return None;
        }
        let byte = |s: &str, i: usize| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok();
        let mut trace_id = [0; 16];
        for (i, b) in trace_id.iter_mut().enumerate() {
            *b = byte(trace, i)?;
        }
        let mut parent_id = [0; 8];
        for (i, b) in parent_id.iter_mut().enumerate() {
            *b = byte(parent, i)?;
        }
        let flags = u8::from_str_radix(flags, 16).ok()?;
        (trace_id != [0; 16] && parent_id != [0; 8]).then_some(Self {
            trace_id,
            parent_id,
            flags,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_names_one_trace_and_each_request_its_own_parent() {
        let a = TraceParent::of_run("run_1", "tool:x");
        let b = TraceParent::of_run("run_1", "tool:y");
        let c = TraceParent::of_run("run_2", "tool:x");
        assert_eq!(a.trace_id, b.trace_id);
        assert_ne!(a.parent_id, b.parent_id);
        assert_ne!(a.trace_id, c.trace_id);
        assert_eq!(a, TraceParent::of_run("run_1", "tool:x"));
        let header = a.header();
        assert_eq!(header.len(), 55);
        assert!(header.starts_with("00-") && header.ends_with("-01"));
        assert_eq!(TraceParent::parse(&header), Some(a));
        assert_eq!(TraceParent::trace_id_of("run_1"), hex_lower(&a.trace_id));
    }

    #[test]
    fn parsing_follows_the_w3c_rules() {
        // The specification's example.
        let ok = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let p = TraceParent::parse(ok).unwrap();
        assert_eq!(p.header(), ok);
        // Not sampled stays not sampled.
        let unsampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
        assert_eq!(TraceParent::parse(unsampled).unwrap().header(), unsampled);
        for bad in [
            "",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad}");
        }
        // A later version may carry more fields.
        assert!(
            TraceParent::parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x")
                .is_some()
        );
    }
}
