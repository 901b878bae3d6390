//! Datetime strings of the Azure traces, read exactly: a civil date and a time of day become
//! whole microseconds since 1970-01-01 UTC (days from the civil date, then integer arithmetic),
//! so subtracting the first request's time never drifts.
//!
//! Accepted: `YYYY-MM-DD HH:MM:SS` or `YYYY-MM-DDTHH:MM:SS`, then an optional fraction of 1 to 9
//! digits (cut, not rounded, to microseconds: Azure 2023 writes 7), then an optional zone: `Z`,
//! `+HH:MM` or `-HH:MM` (applied), or nothing (read as UTC). The flavours may be mixed in one
//! file (Azure 2024 writes `…00.001163+00:00` and `…00+00:00` side by side).

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Microseconds since 1970-01-01 00:00:00 UTC, or what the string lacks.
pub fn parse_datetime_us(s: &str) -> Result<i64, String> {
    let bad =
        |why: &str| Err(format!("expected a date and time such as 2023-11-16 18:17:03.9799600, found \"{s}\" ({why})"));
    let b = s.as_bytes();
    let digits = |from: usize, n: usize| -> Option<u32> {
        let part = b.get(from..from + n)?;
        part.iter().all(u8::is_ascii_digit).then(|| part.iter().fold(0, |v, c| v * 10 + u32::from(c - b'0')))
    };
    let (Some(y), Some(mo), Some(d)) = (digits(0, 4), digits(5, 2), digits(8, 2)) else {
        return bad("no YYYY-MM-DD date");
    };
    if b[4] != b'-' || b[7] != b'-' {
        return bad("no YYYY-MM-DD date");
    }
    if !matches!(b.get(10), Some(b' ' | b'T')) {
        return bad("no space or T after the date");
    }
    let (Some(h), Some(mi), Some(sec)) = (digits(11, 2), digits(14, 2), digits(17, 2)) else {
        return bad("no HH:MM:SS time");
    };
    if b[13] != b':' || b[16] != b':' {
        return bad("no HH:MM:SS time");
    }
    let y = i64::from(y);
    if !(1..=12).contains(&mo) || d == 0 || d > days_in_month(y, mo) {
        return bad("no such date");
    }
    if h > 23 || mi > 59 || sec > 59 {
        return bad("no such time of day");
    }
    let mut i = 19;
    let mut micros = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        let n = i - start;
        if n == 0 || n > 9 {
            return bad("a fraction of 1 to 9 digits");
        }
        for k in 0..6 {
            let digit = if k < n { i64::from(b[start + k] - b'0') } else { 0 };
            micros = micros * 10 + digit;
        }
    }
    let offset_s = match &b[i..] {
        [] | [b'Z'] => 0,
        [sign @ (b'+' | b'-'), ..] if b.len() == i + 6 && b[i + 3] == b':' => {
            let (Some(oh), Some(om)) = (digits(i + 1, 2), digits(i + 4, 2)) else {
                return bad("a zone such as +00:00");
            };
            if oh > 23 || om > 59 {
                return bad("a zone such as +00:00");
            }
            let off = i64::from(oh * 3600 + om * 60);
            if *sign == b'+' {
                off
            } else {
                -off
            }
        }
        _ => return bad("a zone of Z, +HH:MM or -HH:MM after the time"),
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + i64::from(h * 3600 + mi * 60 + sec) - offset_s;
    Ok(secs * 1_000_000 + micros)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_azure_flavour_reads_to_the_microsecond() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        let a = parse_datetime_us("2023-11-16 18:17:03.9799600").unwrap();
        assert_eq!(a, 1_700_158_623_979_960);
        assert_eq!(parse_datetime_us("2023-11-16 18:17:03.979960+00:00").unwrap(), a);
        assert_eq!(parse_datetime_us("2023-11-16T18:17:03.97996Z").unwrap(), a);
        assert_eq!(parse_datetime_us("2023-11-16 19:17:03.97996+01:00").unwrap(), a);
        assert_eq!(parse_datetime_us("2024-05-12 00:00:00+00:00").unwrap() % 1_000_000, 0);
        for bad in [
            "2023-02-30 00:00:00",
            "2023-11-16",
            "2023-11-16 25:00:00",
            "2023-11-16 1:00:00",
            "x",
            "2023-11-16 18:17:03.",
            "2023-11-16 18:17:03+0000",
        ] {
            assert!(parse_datetime_us(bad).is_err(), "{bad}");
        }
    }
}
