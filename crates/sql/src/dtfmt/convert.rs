//! do_to_timestamp: combining what the input gave into a date and time, and
//! to_timestamp / to_date (dtfmt rule 6).

use super::from_char::{Reader, TmFromChar};
use super::to_char::{date2j, isoweek2j};
use super::{Mode, Node};
use crate::datetime::{tm2timestamp, valid_julian, Settings, Tm, POSTGRES_EPOCH_JDATE};
use crate::{SqlError, SqlResult};

/// DTERR_FIELD_OVERFLOW of do_to_timestamp.
fn field_overflow(text: &str) -> SqlError {
    SqlError::new(
        "22008",
        format!("date/time field value out of range: \"{text}\""),
    )
}

/// The 12-hour clock's hour to the 24-hour clock's.
fn clock_12(tm: &mut Tm, pm: bool) -> SqlResult<()> {
    if tm.hour < 1 || tm.hour > 12 {
        return Err(SqlError::new(
            "22007",
            format!("hour \"{}\" is invalid for the 12-hour clock", tm.hour),
        )
        .with_hint("Use the 24-hour clock, or give an hour between 1 and 12."));
    }
    if pm && tm.hour < 12 {
        tm.hour += 12;
    } else if !pm && tm.hour == 12 {
        tm.hour = 0;
    }
    Ok(())
}

/// The year from YYYY.. / CC and BC; whether a year was given.
fn year(tmfc: &mut TmFromChar, tm: &mut Tm) -> bool {
    if tmfc.year != 0 {
        if tmfc.cc != 0 && tmfc.yysz <= 2 {
            if tmfc.bc != 0 {
                tmfc.cc = tmfc.cc.wrapping_neg();
            }
            tm.year = tmfc.year % 100;
            if tm.year != 0 {
                tm.year = if tmfc.cc >= 0 {
                    tm.year
                        .wrapping_add((tmfc.cc.wrapping_sub(1)).wrapping_mul(100))
                } else {
                    (tmfc.cc.wrapping_add(1))
                        .wrapping_mul(100)
                        .wrapping_sub(tm.year)
                        .wrapping_add(1)
                };
            } else {
                tm.year = tmfc
                    .cc
                    .wrapping_mul(100)
                    .wrapping_add(if tmfc.cc >= 0 { 0 } else { 1 });
            }
        } else {
            tm.year = tmfc.year;
            if tmfc.bc != 0 {
                tm.year = tm.year.wrapping_neg();
            }
            if tm.year < 0 {
                tm.year += 1;
            }
        }
        true
    } else if tmfc.cc != 0 {
        if tmfc.bc != 0 {
            tmfc.cc = tmfc.cc.wrapping_neg();
        }
        tm.year = if tmfc.cc >= 0 {
            (tmfc.cc.wrapping_sub(1)).wrapping_mul(100).wrapping_add(1)
        } else {
            tmfc.cc.wrapping_mul(100).wrapping_add(1)
        };
        true
    } else {
        false
    }
}

/// PostgreSQL's j2date in its unsigned 32-bit arithmetic.
fn pg_j2date(jd: i32) -> (i32, i32, i32) {
    let mut julian = jd as u32;
    julian = julian.wrapping_add(32044);
    let mut quad = julian / 146_097;
    let extra = (julian.wrapping_sub(quad.wrapping_mul(146_097)))
        .wrapping_mul(4)
        .wrapping_add(3);
    julian = julian
        .wrapping_add(60)
        .wrapping_add(quad.wrapping_mul(3))
        .wrapping_add(extra / 146_097);
    quad = julian / 1461;
    julian = julian.wrapping_sub(quad.wrapping_mul(1461));
    let mut y = (julian.wrapping_mul(4) / 1461) as i32;
    julian = if y != 0 {
        (julian + 305) % 365
    } else {
        (julian + 306) % 366
    } + 123;
    y = y.wrapping_add(quad.wrapping_mul(4) as i32);
    let year = y.wrapping_sub(4800);
    quad = julian * 2141 / 65536;
    let day = julian as i32 - (7834 * quad / 256) as i32;
    let month = ((quad + 10) % 12 + 1) as i32;
    (year, month, day)
}

/// DTK_M(YEAR), DTK_M(MONTH), DTK_M(DAY) of ValidateDate.
const F_YEAR: u8 = 1;
const F_MONTH: u8 = 2;
const F_DAY: u8 = 4;
const F_DATE: u8 = F_YEAR | F_MONTH | F_DAY;

/// The date fields (Julian day, weeks, day, month, day of year); the mask of
/// fields set.
fn date_fields(tmfc: &mut TmFromChar, tm: &mut Tm) -> SqlResult<u8> {
    let mut fmask = 0;
    if tmfc.j != 0 {
        (tm.year, tm.mon, tm.mday) = pg_j2date(tmfc.j);
        fmask |= F_DATE;
    }
    if tmfc.ww != 0 {
        if tmfc.mode == Mode::IsoWeek {
            let mut jday = isoweek2j(tm.year, tmfc.ww);
            if tmfc.d != 0 {
                jday = jday.wrapping_add(if tmfc.d > 1 { tmfc.d - 2 } else { 6 });
            }
            (tm.year, tm.mon, tm.mday) = pg_j2date(jday);
            fmask |= F_DATE;
        } else {
            tmfc.ddd = tmfc.ww.wrapping_sub(1).wrapping_mul(7).wrapping_add(1);
        }
    }
    if tmfc.w != 0 {
        tmfc.dd = tmfc.w.wrapping_sub(1).wrapping_mul(7).wrapping_add(1);
    }
    if tmfc.dd != 0 {
        tm.mday = tmfc.dd;
        fmask |= F_DAY;
    }
    if tmfc.mm != 0 {
        tm.mon = tmfc.mm;
        fmask |= F_MONTH;
    }
    if tmfc.ddd != 0 && (tm.mon <= 1 || tm.mday <= 1) {
        fmask |= day_of_year(tmfc, tm)?;
    }
    Ok(fmask)
}

/// The month and day from the day of the year (Gregorian or ISO).
fn day_of_year(tmfc: &TmFromChar, tm: &mut Tm) -> SqlResult<u8> {
    if tm.year == 0 && tmfc.bc == 0 {
        return Err(SqlError::new(
            "22007",
            "cannot calculate day of year without year information",
        ));
    }
    if tmfc.mode == Mode::IsoWeek {
        let j0 = isoweek2j(tm.year, 1).wrapping_sub(1);
        (tm.year, tm.mon, tm.mday) = pg_j2date(j0.wrapping_add(tmfc.ddd));
        return Ok(F_DATE);
    }
    const YSUM: [[i32; 13]; 2] = [
        [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365],
        [0, 31, 60, 91, 121, 152, 182, 213, 244, 274, 305, 335, 366],
    ];
    let y = &YSUM[usize::from(is_leap(tm.year))];
    let i = (1..=12).find(|&i| tmfc.ddd <= y[i]).unwrap_or(13);
    if tm.mon <= 1 {
        tm.mon = i as i32;
    }
    if tm.mday <= 1 {
        tm.mday = tmfc.ddd.wrapping_sub(y[i - 1]);
    }
    Ok(F_MONTH | F_DAY)
}

fn is_leap(y: i32) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

/// ValidateDate (with the year already final): false if out of range.
fn validate_date(fmask: u8, tm: &Tm) -> bool {
    if fmask & F_MONTH != 0 && !(1..=12).contains(&tm.mon) {
        return false;
    }
    if fmask & F_DAY != 0 && !(1..=31).contains(&tm.mday) {
        return false;
    }
    if fmask & F_DATE == F_DATE {
        let days = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
        let max = days[(tm.mon - 1) as usize] + i32::from(tm.mon == 2 && is_leap(tm.year));
        if tm.mday > max {
            return false;
        }
    }
    true
}

/// What do_to_timestamp gives: the fields, the fraction (microseconds), the
/// zone's offset (seconds west) when TZH/TZM were given, and the FFn precision.
struct Parsed {
    tm: Tm,
    fsec: i64,
    west: Option<i32>,
    fprec: i32,
}

/// do_to_timestamp (dtfmt rule 6).
fn do_to_timestamp(text: &str, nodes: &[Node]) -> SqlResult<Parsed> {
    let mut reader = Reader::new(nodes, text);
    reader.run()?;
    let mut tmfc = reader.out;
    let mut tm = Tm {
        mon: 1,
        mday: 1,
        ..Tm::default()
    };
    if tmfc.ssss != 0 {
        let x = tmfc.ssss;
        tm.hour = x / 3600;
        tm.min = x % 3600 / 60;
        tm.sec = x % 60;
    }
    if tmfc.ss != 0 {
        tm.sec = tmfc.ss;
    }
    if tmfc.mi != 0 {
        tm.min = tmfc.mi;
    }
    if tmfc.hh != 0 {
        tm.hour = tmfc.hh;
    }
    if tmfc.clock12 {
        clock_12(&mut tm, tmfc.pm != 0)?;
    }
    let mut fmask = if year(&mut tmfc, &mut tm) { F_YEAR } else { 0 };
    fmask |= date_fields(&mut tmfc, &mut tm)?;
    let mut fsec: i32 = 0;
    if tmfc.ms != 0 {
        fsec = tmfc.ms.wrapping_mul(1000);
    }
    if tmfc.us != 0 {
        fsec = fsec.wrapping_add(tmfc.us);
    }
    if fmask != 0 && !validate_date(fmask, &tm) {
        return Err(field_overflow(text));
    }
    if !(0..24).contains(&tm.hour)
        || !(0..60).contains(&tm.min)
        || !(0..60).contains(&tm.sec)
        || !(0..1_000_000).contains(&fsec)
    {
        return Err(field_overflow(text));
    }
    let mut west = None;
    if tmfc.tzsign != 0 {
        if !(0..=15).contains(&tmfc.tzh) || !(0..60).contains(&tmfc.tzm) {
            return Err(SqlError::new(
                "22009",
                format!("time zone displacement out of range: \"{text}\""),
            ));
        }
        let off = (tmfc.tzh * 60 + tmfc.tzm) * 60;
        west = Some(if tmfc.tzsign > 0 { -off } else { off });
    }
    Ok(Parsed {
        tm,
        fsec: i64::from(fsec),
        west,
        fprec: tmfc.ff,
    })
}

/// AdjustTimestampForTypmod: rounds to `prec` fraction digits.
fn round_to(us: i64, prec: i32) -> i64 {
    if !(0..6).contains(&prec) {
        return us;
    }
    let scale = 10i64.pow(6 - prec as u32);
    let offset = scale / 2;
    if us >= 0 {
        (us + offset) / scale * scale
    } else {
        -((-us + offset) / scale * scale)
    }
}

/// to_timestamp: the session zone's offset unless TZH/TZM gave one.
pub(super) fn to_timestamp(text: &str, nodes: &[Node], st: &Settings) -> SqlResult<i64> {
    let p = do_to_timestamp(text, nodes)?;
    let west = match p.west {
        Some(w) => w,
        None => zone_west(&p.tm, st),
    };
    let us = tm2timestamp(&p.tm, p.fsec, Some(west))
        .ok_or_else(|| SqlError::new("22008", "timestamp out of range"))?;
    Ok(if p.fprec != 0 {
        round_to(us, p.fprec)
    } else {
        us
    })
}

/// DetermineTimeZoneOffset of local fields in the session zone.
fn zone_west(tm: &Tm, st: &Settings) -> i32 {
    if !valid_julian(tm.year, tm.mon, tm.mday) {
        return 0;
    }
    let days = i64::from(date2j(tm.year, tm.mon, tm.mday)) - 2_440_588;
    let secs = i64::from(tm.hour) * 3600 + i64::from(tm.min) * 60 + i64::from(tm.sec);
    st.zone.local_to_west(days * 86_400 + secs)
}

/// to_date.
pub(super) fn to_date(text: &str, nodes: &[Node]) -> SqlResult<i32> {
    let p = do_to_timestamp(text, nodes)?;
    let tm = &p.tm;
    let range = || SqlError::new("22008", format!("date out of range: \"{text}\""));
    if !valid_julian(tm.year, tm.mon, tm.mday) {
        return Err(range());
    }
    let date = i64::from(date2j(tm.year, tm.mon, tm.mday)) - POSTGRES_EPOCH_JDATE;
    if !(-POSTGRES_EPOCH_JDATE..2_147_483_494 - POSTGRES_EPOCH_JDATE).contains(&date) {
        return Err(range());
    }
    Ok(date as i32)
}
