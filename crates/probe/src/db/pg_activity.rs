//! PostgreSQL `pg_stat_activity` rows aggregated into a wait-event profile:
//! what active backends were waiting on, sampled many times per step.

/// The query the sampler should run: its own backend left out, so the
/// sampling session does not count as an active backend on CPU.
pub const PG_ACTIVITY_QUERY: &str = "SELECT backend_type, state, wait_event_type, wait_event \
     FROM pg_stat_activity WHERE pid <> pg_backend_pid()";

pub use scalelab_core::sample::{ActivityRow, WaitProfile, WaitShare, CPU};

#[cfg(test)]
mod tests {
    use super::*;

    fn row<'a>(state: &'a str, ty: &'a str, ev: &'a str) -> ActivityRow<'a> {
        let opt = |s: &'a str| (!s.is_empty()).then_some(s);
        ActivityRow { backend_type: Some("client backend"), state: opt(state), wait_event_type: opt(ty), wait_event: opt(ev) }
    }

    #[test]
    fn profile() {
        let mut p = WaitProfile::default();
        p.add_poll([row("active", "Lock", "transactionid"), row("active", "", ""), row("idle", "Client", "ClientRead")]);
        p.add_poll([
            row("active", "Lock", "transactionid"),
            row("active", "Lock", "tuple"),
            ActivityRow { backend_type: Some("checkpointer"), wait_event_type: Some("Activity"), ..Default::default() },
        ]);
        assert_eq!(p.mean_active(), Some(2.0));
        let s = p.shares();
        assert_eq!((s[0].wait_event_type.as_str(), s[0].wait_event.as_deref(), s[0].pct), ("Lock", Some("transactionid"), 50.0));
        assert_eq!(p.shares_by_type()[0], ("Lock".to_string(), 75.0));
        assert!(s.iter().any(|w| w.wait_event_type == CPU && w.pct == 25.0));
        let mut q = WaitProfile::default();
        q.merge(&p);
        q.merge(&p);
        assert_eq!(q.polls(), 4);
        assert_eq!(q.shares_by_type(), p.shares_by_type());
    }

    #[test]
    fn nothing_active_is_empty_not_zero() {
        let mut p = WaitProfile::default();
        assert_eq!(p.mean_active(), None);
        p.add_poll([row("idle", "Client", "ClientRead")]);
        assert_eq!(p.mean_active(), Some(0.0));
        assert!(p.shares().is_empty());
    }
}
