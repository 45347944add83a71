//! The facts a result file records about its run that the statistics cannot know: the date, the
//! command line, the machine.

use crate::stats::MachineInfo;

/// `%Y%m%d-%H%M%S` in UTC, as vLLM dates its results.
pub fn format_date(unix_s: f64) -> String {
    let secs = unix_s.max(0.0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}{month:02}{day:02}-{:02}{:02}{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Host name, CPU count and kernel of this machine.
pub fn machine_info() -> MachineInfo {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let hostname = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| read("/proc/sys/kernel/hostname"));
    MachineInfo {
        hostname,
        num_cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        os: format!(
            "{} {}",
            std::env::consts::OS,
            read("/proc/sys/kernel/osrelease")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_format_like_vllm() {
        assert_eq!(format_date(0.0), "19700101-000000");
        // 2026-11-21 23:57:09 UTC.
        assert_eq!(format_date(1_795_305_429.0), "20261121-235709");
        // A leap day.
        assert_eq!(format_date(951_782_400.0), "20000229-000000");
    }
}
