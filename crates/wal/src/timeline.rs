//! Timelines: a promotion starts a new one, and its history file says where each
//! earlier timeline was switched off, as PostgreSQL's `pg_wal/0000000N.history`.
//!
//! Entry points: [`history_file_name`], [`read_history`], [`write_history`],
//! [`switch_point`], [`newest`].
//!
//! File format (PostgreSQL's, text): one line per earlier timeline, in order,
//! `<parent tli>\t<switch point X/X>\t<reason>`; timeline 1 has no file.
//!
//! Rules (cited as "timeline rule N"):
//! 1. A new timeline's history is its parent's lines plus one: the parent's ID and the
//!    LSN where the parent's WAL ends in this history (the end of the last record
//!    replayed before the promotion). WAL before it is shared; after it, the
//!    timelines differ.
//! 2. The file is written atomically and made durable before any WAL of the new
//!    timeline is, so a timeline in `pg_control` always has its history on disk.
//! 3. A server on timeline `t` can serve a client on an earlier timeline `p` only up
//!    to `p`'s switch point; a client whose WAL on `p` goes past it has a history this
//!    server does not share.

use std::path::Path;
use strata_types::Lsn;
use strata_vfs::Vfs;

/// `0000000N.history`.
pub fn history_file_name(tli: u32) -> String {
    format!("{tli:08X}.history")
}

/// One line of a history file: `tli` ended at `switch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub tli: u32,
    pub switch: Lsn,
}

/// Parses a history file's text; a line that is not `tli<TAB>X/X...` is an error.
pub fn parse_history(text: &str) -> Result<Vec<Entry>, String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut f = line.split_whitespace();
        let (Some(t), Some(l)) = (f.next(), f.next()) else {
            return Err(format!("syntax error in history file: {line}"));
        };
        let tli = t
            .parse()
            .map_err(|_| format!("invalid timeline in history file: {line}"))?;
        let switch = l
            .parse()
            .map_err(|_| format!("invalid switch point in history file: {line}"))?;
        out.push(Entry { tli, switch });
    }
    Ok(out)
}

/// The history of timeline `tli` from `data_dir/pg_wal` (empty for timeline 1 or a
/// missing file of timeline 1).
pub fn read_history(vfs: &dyn Vfs, data_dir: &Path, tli: u32) -> std::io::Result<Vec<Entry>> {
    if tli <= 1 {
        return Ok(Vec::new());
    }
    let path = data_dir.join("pg_wal").join(history_file_name(tli));
    let bytes = strata_vfs::read_file(vfs, &path)?;
    parse_history(&String::from_utf8_lossy(&bytes)).map_err(std::io::Error::other)
}

/// The text of timeline `tli`'s history (rule 1).
pub fn history_text(parent: &[Entry], parent_tli: u32, switch: Lsn) -> String {
    let mut text = String::new();
    for e in parent {
        text.push_str(&format!(
            "{}\t{}\tno recovery target specified\n",
            e.tli, e.switch
        ));
    }
    text.push_str(&format!(
        "{parent_tli}\t{switch}\tno recovery target specified\n"
    ));
    text
}

/// Writes `pg_wal/<new>.history` durably (rules 1, 2); returns its text.
pub fn write_history(
    vfs: &dyn Vfs,
    data_dir: &Path,
    new_tli: u32,
    parent_tli: u32,
    switch: Lsn,
) -> std::io::Result<String> {
    let parent = read_history(vfs, data_dir, parent_tli)?;
    let text = history_text(&parent, parent_tli, switch);
    write_history_text(vfs, data_dir, new_tli, &text)?;
    Ok(text)
}

/// Stores a history file as received from a primary (TIMELINE_HISTORY), durably.
pub fn write_history_text(
    vfs: &dyn Vfs,
    data_dir: &Path,
    tli: u32,
    text: &str,
) -> std::io::Result<()> {
    let dir = data_dir.join("pg_wal");
    strata_vfs::write_atomic(vfs, &dir.join(history_file_name(tli)), text.as_bytes())
}

/// Where timeline `tli` ends in `history` (rule 3): `None` if it is not in it.
pub fn switch_point(history: &[Entry], tli: u32) -> Option<Lsn> {
    history.iter().find(|e| e.tli == tli).map(|e| e.switch)
}

/// Which timeline's file of segment `segno` holds the WAL of timeline `tli`'s history
/// there (`history` being `tli`'s): the newest timeline that begins at or before the
/// segment's end (PostgreSQL's XLogFileReadAnyTLI order). WAL rule 11: a timeline's
/// first segment is its own file, with the parent's bytes before the switch.
pub fn segment_timeline(history: &[Entry], tli: u32, segno: u64, seg_bytes: u64) -> u32 {
    if history
        .last()
        .is_none_or(|e| e.switch.0 / seg_bytes <= segno)
    {
        return tli;
    }
    for i in (0..history.len()).rev() {
        let begins = if i == 0 { 0 } else { history[i - 1].switch.0 };
        if begins / seg_bytes <= segno {
            return history[i].tli;
        }
    }
    tli
}

/// The highest timeline with a history file in `data_dir/pg_wal`, at least `from`
/// (PostgreSQL's findNewestTimeLine: a promotion picks the one after it).
pub fn newest(vfs: &dyn Vfs, data_dir: &Path, from: u32) -> u32 {
    let mut tli = from;
    while vfs.exists(&data_dir.join("pg_wal").join(history_file_name(tli + 1))) {
        tli += 1;
    }
    tli
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_timeline_is_the_newest_begun_by_the_segment() {
        let seg = 16 << 20;
        let h = [
            Entry {
                tli: 1,
                switch: Lsn(5 * seg + 100),
            },
            Entry {
                tli: 2,
                switch: Lsn(9 * seg),
            },
        ];
        assert_eq!(segment_timeline(&h, 3, 4, seg), 1);
        assert_eq!(segment_timeline(&h, 3, 5, seg), 2, "2 began inside 5");
        assert_eq!(segment_timeline(&h, 3, 8, seg), 2);
        assert_eq!(
            segment_timeline(&h, 3, 9, seg),
            3,
            "3 began at 9's first byte"
        );
        assert_eq!(segment_timeline(&h, 3, 12, seg), 3);
        assert_eq!(segment_timeline(&[], 1, 12, seg), 1);
    }

    #[test]
    fn history_files_read_back_what_was_written() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("pg_wal")).unwrap();
        let vfs = strata_vfs::StdVfs::arc();
        let t2 = write_history(&*vfs, dir.path(), 2, 1, Lsn(0x300_0158)).unwrap();
        assert_eq!(t2, "1\t0/3000158\tno recovery target specified\n");
        write_history(&*vfs, dir.path(), 3, 2, Lsn(0x1_0000_0028)).unwrap();
        let h = read_history(&*vfs, dir.path(), 3).unwrap();
        assert_eq!(
            h,
            vec![
                Entry {
                    tli: 1,
                    switch: Lsn(0x300_0158)
                },
                Entry {
                    tli: 2,
                    switch: Lsn(0x1_0000_0028)
                }
            ]
        );
        assert_eq!(switch_point(&h, 2), Some(Lsn(0x1_0000_0028)));
        assert_eq!(switch_point(&h, 3), None);
        assert_eq!(newest(&*vfs, dir.path(), 1), 3);
        assert!(read_history(&*vfs, dir.path(), 1).unwrap().is_empty());
        assert!(parse_history("1 nonsense").is_err());
        // PostgreSQL's own file reads the same.
        let pg = parse_history("1\t0/3000158\tno recovery target specified\n\n").unwrap();
        assert_eq!(
            pg,
            vec![Entry {
                tli: 1,
                switch: Lsn(0x300_0158)
            }]
        );
    }
}
