//! Redis's `INFO` text into [`RedisInfo`]: `field:value` lines, and
//! `cmdstat_<name>:calls=N,usec=N,...` for each command.

pub use scalelab_core::sample::{RedisCommandStat, RedisInfo};

/// Parses the text of `INFO` (any sections; unknown fields ignored, a
/// field missing stays `None`).
pub fn parse_redis_info(text: &str) -> RedisInfo {
    let mut info = RedisInfo::default();
    for line in text.lines() {
        let Some((key, value)) = line.trim_end().split_once(':') else { continue };
        if let Some(name) = key.strip_prefix("cmdstat_") {
            let field = |k: &str| value.split(',').find_map(|kv| kv.strip_prefix(k)?.strip_prefix('=')?.parse::<u64>().ok());
            if let (Some(calls), Some(usec)) = (field("calls"), field("usec")) {
                info.commands.push(RedisCommandStat { command: name.to_string(), calls, usec });
            }
            continue;
        }
        let n = value.parse::<u64>().ok();
        let slot = match key {
            "total_commands_processed" => &mut info.total_commands_processed,
            "connected_clients" => &mut info.connected_clients,
            "blocked_clients" => &mut info.blocked_clients,
            "used_memory" => &mut info.used_memory,
            "evicted_keys" => &mut info.evicted_keys,
            "rejected_connections" => &mut info.rejected_connections,
            "keyspace_hits" => &mut info.keyspace_hits,
            "keyspace_misses" => &mut info.keyspace_misses,
            "io_threads_active" => &mut info.io_threads_active,
            _ => continue,
        };
        *slot = n;
    }
    info
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_fields_and_commandstats_parse_and_unknown_lines_are_skipped() {
        let text = "# Stats\r\ntotal_commands_processed:1234\r\nkeyspace_hits:90\r\nkeyspace_misses:10\r\nevicted_keys:0\r\n\
                    # Clients\r\nconnected_clients:5\r\nblocked_clients:0\r\n# Memory\r\nused_memory:1048576\r\nused_memory_human:1.00M\r\n\
                    # Threads\r\nio_threads_active:0\r\n# Commandstats\r\n\
                    cmdstat_get:calls=1000,usec=1700,usec_per_call=1.70,rejected_calls=0,failed_calls=0\r\n\
                    cmdstat_client|list:calls=2,usec=30,usec_per_call=15.00\r\nnonsense\r\n";
        let i = parse_redis_info(text);
        assert_eq!((i.total_commands_processed, i.keyspace_hits, i.keyspace_misses), (Some(1234), Some(90), Some(10)));
        assert_eq!(
            (i.connected_clients, i.used_memory, i.io_threads_active, i.rejected_connections),
            (Some(5), Some(1_048_576), Some(0), None)
        );
        assert_eq!(
            i.commands,
            vec![
                RedisCommandStat { command: "get".into(), calls: 1000, usec: 1700 },
                RedisCommandStat { command: "client|list".into(), calls: 2, usec: 30 },
            ]
        );
    }
}
