//! A [`CircuitShape`]'s byte format, for a file beside the parameters: record a circuit once,
//! read its shape at every start of the service.
//!
//! ```text
//! "PG16SHP1" | num_inputs u64 | num_aux u64 | len u32, coefficients (32 bytes each, canonical) |
//! A, B, C: rows u64 | terms u64 | row ends (u32 each) | terms (variable u32, coefficient u32)
//! ```
//!
//! Integers are big-endian, as in the parameter files. Reading never trusts a length: blocks are
//! read as they arrive (a length claiming more than the input fails at its end), and every index
//! is checked (row ends increasing and ending at the term count, variables below their counts,
//! coefficients in the table), so a corrupt file is an error, never a shape that panics later.

use super::params::{io_error, ReadError};
use super::shape::{CircuitShape, Matrix, INPUT};
use blstrs::Scalar;
use ff::{Field, PrimeField};
use std::io::{self, Read, Write};

const MAGIC: &[u8; 8] = b"PG16SHP1";
/// Values read per block.
const BLOCK: usize = 1 << 16;

impl CircuitShape {
    /// Writes the shape, for [`CircuitShape::read`]:
    ///
    /// ```text
    /// "PG16SHP1" | num_inputs u64 | num_aux u64 | len u32, coefficients (32 bytes each, canonical) |
    /// A, B, C: rows u64 | terms u64 | row ends (u32 each) | terms (variable u32, coefficient u32)
    /// ```
    ///
    /// Integers are big-endian, as in the parameter files. Reading never trusts a length: blocks are
    /// read as they arrive (a length claiming more than the input fails at its end), and every index
    /// is checked (row ends increasing and ending at the term count, variables below their counts,
    /// coefficients in the table), so a corrupt file is an error, never a shape that panics later.
    pub fn write<W: Write>(&self, mut writer: W) -> io::Result<()> {
        let w = &mut writer;
        w.write_all(MAGIC)?;
        w.write_all(&(self.num_inputs as u64).to_be_bytes())?;
        w.write_all(&(self.num_aux as u64).to_be_bytes())?;
        let table = &self.coefficients[1..];
        w.write_all(&(table.len() as u32).to_be_bytes())?;
        for c in table {
            w.write_all(c.to_repr().as_ref())?;
        }
        for m in [&self.a, &self.b, &self.c] {
            w.write_all(&(m.ends.len() as u64).to_be_bytes())?;
            w.write_all(&(m.terms.len() as u64).to_be_bytes())?;
            for end in &m.ends {
                w.write_all(&end.to_be_bytes())?;
            }
            for (var, coeff) in &m.terms {
                w.write_all(&var.to_be_bytes())?;
                w.write_all(&coeff.to_be_bytes())?;
            }
        }
        Ok(())
    }

    /// Reads a shape written by [`CircuitShape::write`], checking every length and index: a
    /// cut file is [`ReadError::Truncated`], a coefficient that is not a canonical field element
    /// [`ReadError::InvalidPoint`] (section `coefficients`), anything else out of place
    /// [`ReadError::Malformed`].
    pub fn read<R: Read>(mut reader: R) -> Result<CircuitShape, ReadError> {
        let r = &mut reader;
        let mut magic = [0u8; 8];
        r.read_exact(&mut magic).map_err(io_error("the magic"))?;
        if &magic != MAGIC {
            return Err(ReadError::Malformed("not a circuit shape file".into()));
        }
        let num_inputs = count(read_u64(r, "num_inputs")?, "num_inputs")?;
        let num_aux = count(read_u64(r, "num_aux")?, "num_aux")?;
        if num_inputs == 0 || num_inputs > INPUT as usize || num_aux >= INPUT as usize {
            return Err(ReadError::Malformed(format!(
                "{num_inputs} inputs and {num_aux} auxiliary variables"
            )));
        }
        let len = u32::from_be_bytes(read_array(r, "coefficients")?) as usize;
        // The table's first entry, `ONE`, is implied.
        let mut coefficients = vec![Scalar::ONE];
        for (index, bytes) in read_blocks::<32>(r, len, "coefficients")?
            .into_iter()
            .enumerate()
        {
            let c = Option::<Scalar>::from(Scalar::from_repr(bytes)).ok_or(
                ReadError::InvalidPoint {
                    section: "coefficients",
                    index,
                },
            )?;
            coefficients.push(c);
        }
        let mut matrices = Vec::with_capacity(3);
        for name in ["A", "B", "C"] {
            let rows = count(read_u64(r, name)?, name)?;
            let terms = count(read_u64(r, name)?, name)?;
            let ends: Vec<u32> = read_blocks::<4>(r, rows, name)?
                .into_iter()
                .map(u32::from_be_bytes)
                .collect();
            let terms: Vec<(u32, u32)> = read_blocks::<8>(r, terms, name)?
                .into_iter()
                .map(|b| {
                    (
                        u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
                        u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
                    )
                })
                .collect();
            let m = Matrix { ends, terms };
            check_matrix(&m, name, num_inputs, num_aux, coefficients.len())?;
            matrices.push(m);
        }
        let c = matrices.pop().unwrap_or_default();
        let b = matrices.pop().unwrap_or_default();
        let a = matrices.pop().unwrap_or_default();
        if a.ends.len() != b.ends.len() || a.ends.len() != c.ends.len() {
            return Err(ReadError::Malformed(format!(
                "the matrices have {}, {} and {} rows",
                a.ends.len(),
                b.ends.len(),
                c.ends.len()
            )));
        }
        Ok(CircuitShape::from_parts(
            num_inputs,
            num_aux,
            [a, b, c],
            coefficients,
        ))
    }
}

/// Row ends increasing and ending at the term count; every variable and coefficient in range.
fn check_matrix(
    m: &Matrix,
    name: &str,
    num_inputs: usize,
    num_aux: usize,
    num_coefficients: usize,
) -> Result<(), ReadError> {
    let malformed = |what: String| Err(ReadError::Malformed(format!("matrix {name}: {what}")));
    let mut last = 0u32;
    for (row, &end) in m.ends.iter().enumerate() {
        if end < last {
            return malformed(format!("row {row} ends before the row above"));
        }
        last = end;
    }
    if last as usize != m.terms.len() {
        return malformed(format!(
            "the rows end at {last} but there are {} terms",
            m.terms.len()
        ));
    }
    for (i, &(var, coeff)) in m.terms.iter().enumerate() {
        let fits = if var & INPUT != 0 {
            ((var & !INPUT) as usize) < num_inputs
        } else {
            (var as usize) < num_aux
        };
        if !fits || coeff as usize >= num_coefficients {
            return malformed(format!(
                "term {i} names a variable or coefficient out of range"
            ));
        }
    }
    Ok(())
}

fn count(v: u64, what: &str) -> Result<usize, ReadError> {
    usize::try_from(v).map_err(|_| ReadError::Malformed(format!("{what} does not fit in memory")))
}

fn read_array<const N: usize, R: Read>(
    r: &mut R,
    section: &'static str,
) -> Result<[u8; N], ReadError> {
    let mut bytes = [0u8; N];
    r.read_exact(&mut bytes).map_err(io_error(section))?;
    Ok(bytes)
}

fn read_u64<R: Read>(r: &mut R, section: &'static str) -> Result<u64, ReadError> {
    read_array::<8, R>(r, section).map(u64::from_be_bytes)
}

/// `count` values of `N` bytes, a block at a time: the buffer grows with the bytes that arrive,
/// so a count claiming more than the input holds fails at its end without allocating for it.
fn read_blocks<const N: usize>(
    r: &mut impl Read,
    count: usize,
    section: &'static str,
) -> Result<Vec<[u8; N]>, ReadError> {
    let mut out = Vec::new();
    let mut bytes = Vec::new();
    while out.len() < count {
        let want = (count - out.len()).min(BLOCK) * N;
        bytes.clear();
        Read::take(&mut *r, want as u64)
            .read_to_end(&mut bytes)
            .map_err(io_error(section))?;
        if bytes.len() < want {
            return Err(ReadError::Truncated { section });
        }
        out.extend(bytes.chunks_exact(N).map(|c| {
            let mut a = [0u8; N];
            a.copy_from_slice(c);
            a
        }));
    }
    Ok(out)
}
