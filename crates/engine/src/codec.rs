//! Little-endian encoding of WAL payloads and catalog tuples.
//!
//! Entry points: [`Enc`] (append fields to a byte vector) and [`Dec`] (read them back;
//! every read checks the length, so bytes from disk never panic: STYLE habit 6).

use strata_types::{BlockNumber, ForkNumber, Oid, RelFileNumber, RelKey};

/// Bytes that do not decode as the structure they were read as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

pub type DecResult<T> = Result<T, DecodeError>;

#[derive(Default)]
pub struct Enc(pub Vec<u8>);

impl Enc {
    pub fn new() -> Enc {
        Enc(Vec::new())
    }
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    pub fn u16(&mut self, v: u16) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.u32(v.len() as u32);
        self.0.extend_from_slice(v);
        self
    }
    pub fn raw(&mut self, v: &[u8]) -> &mut Self {
        self.0.extend_from_slice(v);
        self
    }
    pub fn str(&mut self, v: &str) -> &mut Self {
        self.bytes(v.as_bytes())
    }
    pub fn rel(&mut self, r: RelKey) -> &mut Self {
        self.u32(r.spc.0).u32(r.db.0).u64(r.rel.0)
    }
    pub fn oids(&mut self, v: &[Oid]) -> &mut Self {
        self.u32(v.len() as u32);
        for o in v {
            self.u32(o.0);
        }
        self
    }
}

pub struct Dec<'a> {
    buf: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Dec<'a> {
    pub fn new(buf: &'a [u8], what: &'static str) -> Dec<'a> {
        Dec { buf, pos: 0, what }
    }
    /// The next `n` bytes. Inlined, its error path out of line: a row decode calls
    /// it once per column.
    #[inline]
    pub fn take(&mut self, n: usize) -> DecResult<&'a [u8]> {
        if self.buf.len() - self.pos < n {
            return Err(self.truncated(n));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    #[cold]
    #[inline(never)]
    fn truncated(&self, n: usize) -> DecodeError {
        DecodeError(format!(
            "{} truncated: wanted {n} bytes at offset {} of {}",
            self.what,
            self.pos,
            self.buf.len()
        ))
    }
    #[inline]
    pub fn u8(&mut self) -> DecResult<u8> {
        Ok(self.take(1)?[0])
    }
    #[inline]
    pub fn u16(&mut self) -> DecResult<u16> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().expect("2")))
    }
    #[inline]
    pub fn u32(&mut self) -> DecResult<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4")))
    }
    #[inline]
    pub fn u64(&mut self) -> DecResult<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }
    pub fn bytes(&mut self) -> DecResult<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    pub fn str(&mut self) -> DecResult<String> {
        let b = self.bytes()?;
        String::from_utf8(b.to_vec()).map_err(|_| DecodeError(format!("{}: bad UTF-8", self.what)))
    }
    pub fn rel(&mut self) -> DecResult<RelKey> {
        Ok(RelKey::new(
            Oid(self.u32()?),
            Oid(self.u32()?),
            RelFileNumber(self.u64()?),
        ))
    }
    pub fn fork(&mut self) -> DecResult<ForkNumber> {
        let i = self.u8()?;
        ForkNumber::from_index(i as usize)
            .ok_or_else(|| DecodeError(format!("{}: bad fork {i}", self.what)))
    }
    pub fn block(&mut self) -> DecResult<BlockNumber> {
        Ok(BlockNumber(self.u32()?))
    }
    pub fn oids(&mut self) -> DecResult<Vec<Oid>> {
        let n = self.u32()? as usize;
        if n > self.remaining() / 4 {
            return Err(DecodeError(format!("{}: bad count {n}", self.what)));
        }
        (0..n).map(|_| Ok(Oid(self.u32()?))).collect()
    }
    pub fn count(&mut self, min_item_bytes: usize) -> DecResult<usize> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_item_bytes.max(1)) > self.remaining() {
            return Err(DecodeError(format!("{}: bad count {n}", self.what)));
        }
        Ok(n)
    }
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
    pub fn rest(&mut self) -> &'a [u8] {
        let s = &self.buf[self.pos..];
        self.pos = self.buf.len();
        s
    }
    pub fn finish(&self) -> DecResult<()> {
        if self.pos != self.buf.len() {
            return Err(DecodeError(format!(
                "{}: {} trailing bytes",
                self.what,
                self.buf.len() - self.pos
            )));
        }
        Ok(())
    }
}
