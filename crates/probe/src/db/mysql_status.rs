//! `SHOW GLOBAL STATUS` (MySQL and MariaDB) as typed counters.

pub use scalelab_core::sample::{GlobalStatus, HandlerCounters};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_values_are_none() {
        let s = GlobalStatus::from_rows([("Questions", "many"), ("Com_select", ""), ("Uptime", "-3")]);
        assert_eq!((s.questions, s.com_select, s.uptime_s), (None, None, None));
        assert!(s.missing().contains(&"Questions"));
    }
}
