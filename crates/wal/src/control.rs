//! The control file, `global/pg_control`: where recovery starts.
//!
//! Entry points: [`ControlFile::read`], [`ControlFile::write`].
//!
//! Layout (little-endian, 512 bytes: one sector, the rest zeros):
//!
//! | offset | size | field                  |
//! |--------|------|------------------------|
//! | 0      | 8    | magic `STRATACF`       |
//! | 8      | 4    | layout version (3)     |
//! | 12     | 4    | cluster state          |
//! | 16     | 8    | system identifier      |
//! | 24     | 8    | last checkpoint LSN    |
//! | 32     | 8    | its redo LSN           |
//! | 40     | 4    | next transaction id    |
//! | 44     | 4    | next OID               |
//! | 48     | 8    | next relation file number |
//! | 56     | 8    | WAL segment size, bytes |
//! | 64     | 4    | block size, bytes      |
//! | 68     | 8    | checkpoint time, Unix seconds |
//! | 76     | 4    | timeline ID (1 until a promotion) |
//! | 80     | 4    | CRC32C of bytes 0..80  |
//!
//! Version 1 (written before timelines existed) has its CRC at 76 and is read as
//! timeline 1. Version 3 has version 2's layout; it marks the WAL and heap formats
//! that came with it (heap pruning keeps item indexes, Heap/MULTI_INSERT, Btree
//! records, timeline-named segments), which an earlier build's WAL does not follow.
//!
//! Rules:
//! 1. A write is atomic: a new file is written and fsynced beside the old one, renamed
//!    over it, and the directory fsynced. A crash leaves the old or the new file whole.
//! 2. A read verifies magic, version, CRC and block size; any mismatch is an error that
//!    names the file: recovery never starts from a control file it cannot trust.
//! 3. A control file of an earlier version is taken only from a cluster shut down
//!    cleanly (nothing of the earlier build's WAL is replayed but its shutdown
//!    checkpoint); the next write makes it the current version.

use crate::WalError;
use std::path::{Path, PathBuf};
use strata_types::{Lsn, RelFileNumber, BLCKSZ};
use strata_vfs::Vfs;
use thiserror::Error;

const MAGIC: &[u8; 8] = b"STRATACF";
const VERSION: u32 = 3;
const FILE_BYTES: usize = 512;
const CRC_OFFSET: usize = 80;
/// Where version 1 of the layout kept its CRC.
const CRC_OFFSET_V1: usize = 76;

/// What the cluster was doing when the control file was last written.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ClusterState {
    ShutDown = 1,
    ShuttingDown = 2,
    InCrashRecovery = 3,
    InProduction = 4,
    /// A standby's restartpoint wrote it (PostgreSQL's DB_IN_ARCHIVE_RECOVERY).
    InArchiveRecovery = 5,
}

impl ClusterState {
    fn from_u32(v: u32) -> Option<ClusterState> {
        Some(match v {
            1 => ClusterState::ShutDown,
            2 => ClusterState::ShuttingDown,
            3 => ClusterState::InCrashRecovery,
            4 => ClusterState::InProduction,
            5 => ClusterState::InArchiveRecovery,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ControlFile {
    pub state: ClusterState,
    pub system_identifier: u64,
    pub checkpoint: Lsn,
    pub redo: Lsn,
    pub next_xid: u32,
    pub next_oid: u32,
    pub next_relfilenumber: RelFileNumber,
    pub wal_segment_bytes: u64,
    pub checkpoint_time_unix_s: u64,
    /// The timeline the cluster writes (and a standby replays) on.
    pub timeline: u32,
}

#[derive(Debug, Error)]
pub enum ControlError {
    #[error("could not read control file \"{path}\": {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("control file \"{path}\" is invalid: {reason}")]
    Invalid { path: PathBuf, reason: String },
}

fn path_of(data_dir: &Path) -> PathBuf {
    data_dir.join("global").join("pg_control")
}

impl ControlFile {
    fn encode(&self) -> [u8; FILE_BYTES] {
        let mut b = [0u8; FILE_BYTES];
        b[0..8].copy_from_slice(MAGIC);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&(self.state as u32).to_le_bytes());
        b[16..24].copy_from_slice(&self.system_identifier.to_le_bytes());
        b[24..32].copy_from_slice(&self.checkpoint.0.to_le_bytes());
        b[32..40].copy_from_slice(&self.redo.0.to_le_bytes());
        b[40..44].copy_from_slice(&self.next_xid.to_le_bytes());
        b[44..48].copy_from_slice(&self.next_oid.to_le_bytes());
        b[48..56].copy_from_slice(&self.next_relfilenumber.0.to_le_bytes());
        b[56..64].copy_from_slice(&self.wal_segment_bytes.to_le_bytes());
        b[64..68].copy_from_slice(&(BLCKSZ as u32).to_le_bytes());
        b[68..76].copy_from_slice(&self.checkpoint_time_unix_s.to_le_bytes());
        b[76..80].copy_from_slice(&self.timeline.to_le_bytes());
        let crc = crc32c::crc32c(&b[..CRC_OFFSET]);
        b[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_le_bytes());
        b
    }

    fn decode(b: &[u8], path: &Path) -> Result<ControlFile, ControlError> {
        let invalid = |reason: String| ControlError::Invalid {
            path: path.to_path_buf(),
            reason,
        };
        if b.len() != FILE_BYTES {
            return Err(invalid(format!("{} bytes, expected {FILE_BYTES}", b.len())));
        }
        if &b[0..8] != MAGIC {
            return Err(invalid("not a Strata control file".into()));
        }
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        let version = u32_at(8);
        let crc_at = if version == 1 {
            CRC_OFFSET_V1
        } else {
            CRC_OFFSET
        };
        if u32_at(crc_at) != crc32c::crc32c(&b[..crc_at]) {
            return Err(invalid("incorrect checksum".into()));
        }
        if !(1..=VERSION).contains(&version) {
            return Err(invalid(format!(
                "layout version {}, this server reads {VERSION}",
                u32_at(8)
            )));
        }
        if version < VERSION && u32_at(12) != ClusterState::ShutDown as u32 {
            return Err(invalid(format!(
                "layout version {version} of an earlier build, whose WAL this server cannot replay; \
                 shut the cluster down cleanly with that build first (rule 3)"
            )));
        }
        if u32_at(64) != BLCKSZ as u32 {
            return Err(invalid(format!(
                "cluster initialised with block size {}, this server uses {BLCKSZ}",
                u32_at(64)
            )));
        }
        let state = ClusterState::from_u32(u32_at(12))
            .ok_or_else(|| invalid(format!("unknown cluster state {}", u32_at(12))))?;
        Ok(ControlFile {
            state,
            system_identifier: u64_at(16),
            checkpoint: Lsn(u64_at(24)),
            redo: Lsn(u64_at(32)),
            next_xid: u32_at(40),
            next_oid: u32_at(44),
            next_relfilenumber: RelFileNumber(u64_at(48)),
            wal_segment_bytes: u64_at(56),
            checkpoint_time_unix_s: u64_at(68),
            timeline: if version == 1 { 1 } else { u32_at(76) },
        })
    }

    /// Reads and verifies `global/pg_control` (rule 2).
    pub fn read(vfs: &dyn Vfs, data_dir: &Path) -> Result<ControlFile, ControlError> {
        let path = path_of(data_dir);
        let bytes = strata_vfs::read_file(vfs, &path).map_err(|source| ControlError::Io {
            path: path.clone(),
            source,
        })?;
        ControlFile::decode(&bytes, &path)
    }

    /// Writes `global/pg_control` atomically (rule 1). A failure is fatal to the
    /// caller: whether the old or the new file survives a crash is then unknown.
    pub fn write(&self, vfs: &dyn Vfs, data_dir: &Path) -> Result<(), WalError> {
        let path = path_of(data_dir);
        strata_vfs::write_atomic(vfs, &path, &self.encode())
            .map_err(|e| crate::io_err("write", &path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use strata_vfs::StdVfs;

    fn sample() -> ControlFile {
        ControlFile {
            state: ClusterState::InProduction,
            system_identifier: 0x1234_5678_9ABC_DEF0,
            checkpoint: Lsn(0x1_0000_0028),
            redo: Lsn(0x1_0000_0000),
            next_xid: 742,
            next_oid: 16_384,
            next_relfilenumber: RelFileNumber(1 << 40),
            wal_segment_bytes: 16 << 20,
            checkpoint_time_unix_s: 1_795_000_000,
            timeline: 3,
        }
    }

    fn setup() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("global")).unwrap();
        dir
    }

    #[test]
    fn round_trip_and_overwrite() {
        let dir = setup();
        sample().write(&StdVfs, dir.path()).unwrap();
        assert_eq!(ControlFile::read(&StdVfs, dir.path()).unwrap(), sample());
        let later = ControlFile {
            state: ClusterState::ShutDown,
            checkpoint: Lsn(0x2_0000_0000),
            ..sample()
        };
        later.write(&StdVfs, dir.path()).unwrap();
        assert_eq!(ControlFile::read(&StdVfs, dir.path()).unwrap(), later);
        assert!(!dir.path().join("global/pg_control.tmp").exists());
    }

    #[test]
    fn every_damage_is_refused_with_the_file_named() {
        let dir = setup();
        let path = dir.path().join("global/pg_control");
        assert!(matches!(
            ControlFile::read(&StdVfs, dir.path()),
            Err(ControlError::Io { .. })
        ));
        sample().write(&StdVfs, dir.path()).unwrap();
        let good = fs::read(&path).unwrap();
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (good[..100].to_vec(), "bytes"),
            (
                {
                    let mut b = good.clone();
                    b[30] ^= 1;
                    b
                },
                "incorrect checksum",
            ),
            (
                {
                    let mut b = good.clone();
                    b[0] = b'X';
                    b
                },
                "not a Strata control file",
            ),
        ];
        for (bytes, expect) in cases {
            fs::write(&path, &bytes).unwrap();
            let err = ControlFile::read(&StdVfs, dir.path())
                .unwrap_err()
                .to_string();
            assert!(err.contains(expect) && err.contains("pg_control"), "{err}");
        }
    }

    /// Rule 3: a version-2 file (version 3's layout) is read if the cluster was shut
    /// down cleanly, refused if its WAL would have to be replayed.
    #[test]
    fn an_earlier_version_is_taken_only_after_a_clean_shutdown() {
        let dir = setup();
        let path = dir.path().join("global/pg_control");
        for (state, ok) in [
            (ClusterState::ShutDown, true),
            (ClusterState::InProduction, false),
        ] {
            let mut c = sample();
            c.state = state;
            let mut b = c.encode();
            b[8..12].copy_from_slice(&2u32.to_le_bytes());
            let crc = crc32c::crc32c(&b[..CRC_OFFSET]);
            b[CRC_OFFSET..CRC_OFFSET + 4].copy_from_slice(&crc.to_le_bytes());
            fs::write(&path, b).unwrap();
            match ControlFile::read(&StdVfs, dir.path()) {
                Ok(read) => assert!(ok && read == c, "{state:?}"),
                Err(e) => assert!(!ok && e.to_string().contains("earlier build"), "{e}"),
            }
        }
    }

    #[test]
    fn a_leftover_temporary_file_is_ignored() {
        let dir = setup();
        sample().write(&StdVfs, dir.path()).unwrap();
        // a crash between writing the temporary file and the rename
        fs::write(dir.path().join("global/pg_control.tmp"), b"half").unwrap();
        assert_eq!(ControlFile::read(&StdVfs, dir.path()).unwrap(), sample());
    }
}
