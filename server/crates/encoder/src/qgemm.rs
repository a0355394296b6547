//! Int8 linear layers for the encoder: weights quantised once at load,
//! activations per row at run time, products accumulated exactly in i32.
//!
//! - A weight column `j` is stored as `round(w / s_j)` (ties to even, as
//!   every rounding here) in `[-63, 63]` (seven bits, see below) with
//!   `s_j = max |w[.., j]| / 63`; a row of activations as
//!   `round(x / t) + z` in `[0, 255]`, asymmetric: `t = (max - min) / 255`
//!   over the row's values and 0, and `z` the code of 0, so a row after
//!   GELU, which reaches only -0.17 below 0, gets nearly twice the steps a
//!   symmetric `[-max, max]` code would give it. The product is
//!   `t * s_j * (acc - z * sum_k q_w[k, j])`. The sum over
//!   `k` is integer and exact, so the AVX-512 VNNI kernel, the AVX2 one
//!   and the portable one give bit-identical results (a test pins it).
//! - Weights are packed in panels of 16 output columns, each panel
//!   `k / 4` blocks of 16 columns x 4 consecutive inputs, the operand
//!   layout of `vpdpbusd`.
//! - Rows are split over the calling rayon pool in jobs of `JOB_ROWS`.
//!
//! - Why seven bits: AVX2 has no `vpdpbusd`; its `vpmaddubsw` multiplies
//!   unsigned by signed bytes but saturates each 16-bit sum of two
//!   products. `255 * 63 * 2 = 32130` fits in an i16 where `255 * 127 * 2`
//!   does not, so with weights in `[-63, 63]` the AVX2 kernel multiplies
//!   the same unsigned activations as VNNI, exactly, in three instructions
//!   per 32 products (`vpmaddubsw`, `vpmaddwd`, `vpaddd`) instead of four
//!   with a sign step. Alone, the weights' extra rounding lowered the
//!   mean cosine of MiniLM's vectors to the f32 ones from 0.9962 to
//!   0.9942; the asymmetric activation code more than wins it back
//!   (0.9967; tests/embeddings.rs pins the bound).
//!
//! Used only where the CPU has AVX-512 VNNI or AVX2 (`QuantLinear::kernel`):
//! elsewhere the portable kernel would be slower than f32 gemm, so the
//! encoder keeps f32 there.
//!
//! Never: allocation per element, or any I/O.

use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Output columns per panel (one 512-bit register of i32).
const PANEL: usize = 16;
/// Columns are padded to a multiple of `PANEL * TILE_PANELS`.
const TILE_PANELS: usize = 4;
/// Rows per parallel job.
const JOB_ROWS: usize = 32;
/// The largest quantised weight magnitude: seven bits, so that AVX2's
/// saturating `vpmaddubsw` stays exact (see the module doc).
const WEIGHT_MAX: i32 = 63;

/// The int8 product this CPU runs natively.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// AVX-512 F, BW and VNNI: `vpdpbusd`.
    Vnni,
    /// AVX-VNNI (the 256-bit `vpdpbusd` of CPUs with AVX2 but no
    /// AVX-512: Intel's since Alder Lake), with AVX2 and FMA around it.
    AvxVnni,
    /// AVX2 (with FMA, for the f32 steps around it): `vpmaddubsw`, exact
    /// on seven-bit weights.
    Avx2,
    /// Plain loops: correct everywhere, slower than f32 gemm.
    Portable,
}

/// `y = x W + b` with `W` quantised to int8 per output column.
#[derive(Debug)]
pub(crate) struct QuantLinear {
    /// Input features.
    k: usize,
    /// Output features.
    n: usize,
    /// `k` rounded up to a multiple of 4.
    k4: usize,
    /// Panels of `PANEL` columns, a multiple of `TILE_PANELS`.
    panels: usize,
    /// `panels x (k4 / 4) x PANEL x 4` weights.
    packed: Vec<i8>,
    /// Per output column: the weight scale.
    scale: Vec<f32>,
    /// Per output column: the sum of its quantised weights, which times a
    /// row's zero code is taken off the accumulator.
    column_sum: Vec<i32>,
    bias: Vec<f32>,
    /// Exact GELU applied to each job's rows once they are scaled back,
    /// while they are in cache (the feed-forward layer's activation).
    gelu: bool,
}

impl QuantLinear {
    /// The native int8 kernels this CPU runs, fastest first (checked once).
    fn native_kernels() -> &'static [Kernel] {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            use std::sync::OnceLock;
            static KERNELS: OnceLock<Vec<Kernel>> = OnceLock::new();
            KERNELS.get_or_init(|| {
                let cap = crate::kernels::cap();
                let mut kernels = Vec::new();
                if cap >= 2 && has!("avx512f") && has!("avx512bw") && has!("avx512vnni") {
                    kernels.push(Kernel::Vnni);
                }
                let avx2 = cap >= 1 && has!("avx2") && has!("fma");
                if avx2 && crate::kernels::avx_vnni_allowed() && has!("avxvnni") {
                    kernels.push(Kernel::AvxVnni);
                }
                if avx2 {
                    kernels.push(Kernel::Avx2);
                }
                kernels
            })
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            &[]
        }
    }

    /// The fastest int8 kernel this CPU has.
    pub(crate) fn kernel() -> Kernel {
        QuantLinear::native_kernels()
            .first()
            .copied()
            .unwrap_or(Kernel::Portable)
    }

    /// Whether this CPU runs an int8 kernel natively.
    pub(crate) fn fast_path() -> bool {
        QuantLinear::kernel() != Kernel::Portable
    }

    /// Quantises `weight_t`, `k` rows of `n` (input-major, as `x W` reads
    /// it), with `bias` of length `n`.
    pub(crate) fn new(weight_t: &[f32], k: usize, n: usize, bias: &[f32]) -> QuantLinear {
        assert_eq!(weight_t.len(), k * n, "weight shape");
        assert_eq!(bias.len(), n, "bias shape");
        let mut scale = vec![0f32; n];
        for row in weight_t.chunks_exact(n) {
            for (s, &w) in scale.iter_mut().zip(row) {
                *s = s.max(w.abs());
            }
        }
        for s in &mut scale {
            *s = if *s > 0.0 {
                *s / WEIGHT_MAX as f32
            } else {
                1.0
            };
        }
        let k4 = k.div_ceil(4) * 4;
        let panels = n.div_ceil(PANEL * TILE_PANELS) * TILE_PANELS;
        let mut packed = vec![0i8; panels * k4 * PANEL];
        let mut column_sum = vec![0i32; n];
        for (kk, row) in weight_t.chunks_exact(n).enumerate() {
            for (j, &w) in row.iter().enumerate() {
                let q = round_even(w / scale[j]).clamp(-WEIGHT_MAX, WEIGHT_MAX) as i8;
                column_sum[j] += i32::from(q);
                let (panel, column) = (j / PANEL, j % PANEL);
                packed[((panel * (k4 / 4) + kk / 4) * PANEL + column) * 4 + kk % 4] = q;
            }
        }
        QuantLinear {
            k,
            n,
            k4,
            panels,
            packed,
            scale,
            column_sum,
            bias: bias.to_vec(),
            gelu: false,
        }
    }

    /// This layer with the exact GELU fused onto its output.
    pub(crate) fn with_gelu(mut self) -> QuantLinear {
        self.gelu = true;
        self
    }

    /// Whether `with_gelu` made this layer.
    pub(crate) fn applies_gelu(&self) -> bool {
        self.gelu
    }

    pub(crate) fn inputs(&self) -> usize {
        self.k
    }

    pub(crate) fn outputs(&self) -> usize {
        self.n
    }

    /// `x` holds rows of `k`; the result rows of `n`, on the calling pool.
    pub(crate) fn forward(&self, x: &[f32]) -> Vec<f32> {
        self.forward_with(x, QuantLinear::kernel())
    }

    fn forward_with(&self, x: &[f32], kernel: Kernel) -> Vec<f32> {
        let rows = x.len() / self.k.max(1);
        let len = rows * self.n;
        // Not zeroed first: every job writes each element of its rows.
        // Zeroing the output (up to 25 MB a layer) and the kernel clearing
        // its fresh pages took 9% of the encoder's time.
        let mut out: Vec<f32> = Vec::with_capacity(len);
        out.spare_capacity_mut()[..len]
            .par_chunks_mut(JOB_ROWS * self.n)
            .zip(x.par_chunks(JOB_ROWS * self.k))
            .for_each(|(out, x)| self.job(x, out, kernel));
        // SAFETY: `job` initialised every element below `len` (each job's
        // `scale_back` writes all `n` outputs of each of its rows, and the
        // jobs' chunks cover `rows` rows); a panic in a job never gets here.
        unsafe { out.set_len(len) };
        out
    }

    /// `out = x W + b` (then GELU, where fused) for any number of rows of
    /// `x`, on the calling thread: one job of a caller that splits the
    /// rows itself (the fused encoder layer).
    pub(crate) fn rows_into(&self, x: &[f32], out: &mut [f32]) {
        assert_eq!(
            x.len() / self.k.max(1) * self.n,
            out.len(),
            "rows_into shape"
        );
        // SAFETY: `MaybeUninit<f32>` has the layout of `f32`, and `job`
        // only ever writes initialised floats through it.
        let out = unsafe { &mut *(out as *mut [f32] as *mut [MaybeUninit<f32>]) };
        self.job(x, out, QuantLinear::kernel());
    }

    /// One job: quantise its rows, multiply, scale back (writing every
    /// element of `out`), activate.
    fn job(&self, x: &[f32], out: &mut [MaybeUninit<f32>], kernel: Kernel) {
        self.product(x, out, kernel);
        if self.gelu {
            // SAFETY: `product` wrote every element of `out`, and
            // `MaybeUninit<f32>` has the layout of `f32`.
            let out = unsafe { &mut *(out as *mut [MaybeUninit<f32>] as *mut [f32]) };
            crate::kernels::gelu_erf_in_place(out);
        }
    }

    /// `out = x W + b` for one job's rows.
    fn product(&self, x: &[f32], out: &mut [MaybeUninit<f32>], kernel: Kernel) {
        SCRATCH.with_borrow_mut(|scratch| self.product_in(x, out, kernel, scratch));
    }

    fn product_in(
        &self,
        x: &[f32],
        out: &mut [MaybeUninit<f32>],
        kernel: Kernel,
        scratch: &mut Scratch,
    ) {
        let rows = x.len() / self.k;
        let width = self.panels * PANEL;
        // Left as the last job left them: `quantise` writes every input's
        // code (inputs past `k` meet zero weights, so theirs do not
        // matter), and the native kernels store every accumulator.
        scratch.qx.resize(rows * self.k4, 0);
        scratch.codes.resize(rows, RowCode::default());
        scratch.acc.resize(rows * width, 0);
        let Scratch { qx, codes, acc } = scratch;
        #[cfg(target_arch = "x86_64")]
        match kernel {
            Kernel::Vnni => {
                // SAFETY: `kernel` chose Vnni only where it found AVX-512
                // F, BW and VNNI; the buffers have the shapes these read.
                unsafe {
                    vnni::quantise(x, self.k, self.k4, qx, codes);
                    vnni::multiply(qx, rows, self.k4, &self.packed, self.panels, acc);
                    vnni::scale_back(self, acc, codes, out);
                }
                return;
            }
            Kernel::AvxVnni => {
                // SAFETY: `kernel` chose AvxVnni only where it found AVX2,
                // FMA and AVX-VNNI; the buffers have the shapes these read.
                unsafe {
                    avx2::quantise(x, self.k, self.k4, qx, codes);
                    avxvnni::multiply(qx, rows, self.k4, &self.packed, self.panels, acc);
                    avx2::scale_back(self, acc, codes, out);
                }
                return;
            }
            Kernel::Avx2 => {
                // SAFETY: `kernel` chose Avx2 only where it found AVX2 and
                // FMA; the buffers have the shapes these functions read.
                unsafe {
                    avx2::quantise(x, self.k, self.k4, qx, codes);
                    avx2::multiply(qx, rows, self.k4, &self.packed, self.panels, acc);
                    avx2::scale_back(self, acc, codes, out);
                }
                return;
            }
            Kernel::Portable => {}
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = kernel;
        quantise(x, self.k, self.k4, qx, codes);
        // The portable loop adds to its accumulators.
        acc.fill(0);
        portable_multiply(qx, rows, self.k4, &self.packed, self.panels, acc);
        scale_back(self, acc, codes, out);
    }
}

/// A job's working buffers, kept per thread: allocating and zeroing them
/// for every job of every layer took a tenth of the int8 encoder's time.
#[derive(Default)]
struct Scratch {
    qx: Vec<u8>,
    codes: Vec<RowCode>,
    acc: Vec<i32>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// How a row of activations was coded: `x = step * (q - zero)`.
#[derive(Clone, Copy, Debug, Default)]
struct RowCode {
    step: f32,
    zero: i32,
}

/// Rows of `k` activations to rows of `k4` bytes `round(x / t) + z`, and
/// each row's code.
#[inline(always)]
fn quantise(x: &[f32], k: usize, k4: usize, qx: &mut [u8], codes: &mut [RowCode]) {
    for ((x, q), code) in x
        .chunks_exact(k)
        .zip(qx.chunks_exact_mut(k4))
        .zip(codes.iter_mut())
    {
        let (low, high) = crate::kernels::span_with_zero(x);
        let span = high - low;
        *code = if span > 0.0 && span.is_finite() {
            let step = span / 255.0;
            RowCode {
                step,
                zero: round_even(-low / step).clamp(0, 255),
            }
        } else {
            RowCode { step: 1.0, zero: 0 }
        };
        let (inv, zero) = (1.0 / code.step, code.zero);
        for (q, &v) in q.iter_mut().zip(x) {
            *q = (round_even(v * inv) + zero).clamp(0, 255) as u8;
        }
    }
}

/// `out = t * s_j * (acc - z * column_sum_j) + bias_j`, row by row,
/// writing every element of `out` (which may be uninitialised).
#[inline(always)]
fn scale_back(layer: &QuantLinear, acc: &[i32], codes: &[RowCode], out: &mut [MaybeUninit<f32>]) {
    let width = layer.panels * PANEL;
    for ((out, acc), code) in out
        .chunks_exact_mut(layer.n)
        .zip(acc.chunks_exact(width))
        .zip(codes)
    {
        for ((((o, &a), &s), &sum), &b) in out
            .iter_mut()
            .zip(acc)
            .zip(&layer.scale)
            .zip(&layer.column_sum)
            .zip(&layer.bias)
        {
            o.write(code.step * s * (a - code.zero * sum) as f32 + b);
        }
    }
}

/// Rounds to the nearest integer, ties to even, for `|v| < 2^22` (beyond,
/// and for NaN, some integer: callers clamp). Adding 1.5 * 2^23 leaves the
/// rounded value in the low mantissa bits; unlike a saturating cast this
/// vectorises.
#[inline(always)]
fn round_even(v: f32) -> i32 {
    const ROUND: f32 = 12_582_912.0;
    ((v + ROUND).to_bits() as i32).wrapping_sub(ROUND.to_bits() as i32)
}

/// `acc[r][c] = sum_k qx[r][k] * w[k][c]` over the packed layout.
fn portable_multiply(
    qx: &[u8],
    rows: usize,
    k4: usize,
    packed: &[i8],
    panels: usize,
    acc: &mut [i32],
) {
    let blocks = k4 / 4;
    let width = panels * PANEL;
    for r in 0..rows {
        let x = &qx[r * k4..(r + 1) * k4];
        let out = &mut acc[r * width..(r + 1) * width];
        for panel in 0..panels {
            let w = &packed[panel * blocks * PANEL * 4..(panel + 1) * blocks * PANEL * 4];
            for b in 0..blocks {
                for c in 0..PANEL {
                    let mut sum = 0i32;
                    for t in 0..4 {
                        sum += i32::from(x[b * 4 + t]) * i32::from(w[(b * PANEL + c) * 4 + t]);
                    }
                    out[panel * PANEL + c] += sum;
                }
            }
        }
    }
}

/// Defines `quantise` and `scale_back` in a kernel's module: the portable
/// loops, compiled for the instruction set `$features` names.
#[cfg(target_arch = "x86_64")]
macro_rules! compiled_for {
    ($features:literal) => {
        /// `super::quantise`, compiled for this module's instruction set.
        ///
        /// # Safety
        /// The CPU must have the features this module's kernel needs.
        #[target_feature(enable = $features)]
        pub(super) unsafe fn quantise(
            x: &[f32],
            k: usize,
            k4: usize,
            qx: &mut [u8],
            codes: &mut [super::RowCode],
        ) {
            super::quantise(x, k, k4, qx, codes)
        }

        /// `super::scale_back`, compiled for this module's instruction set.
        ///
        /// # Safety
        /// As `quantise`.
        #[target_feature(enable = $features)]
        pub(super) unsafe fn scale_back(
            layer: &super::QuantLinear,
            acc: &[i32],
            codes: &[super::RowCode],
            out: &mut [std::mem::MaybeUninit<f32>],
        ) {
            super::scale_back(layer, acc, codes, out)
        }
    };
}

#[cfg(target_arch = "x86_64")]
mod vnni {
    use super::PANEL;
    use std::arch::x86_64::*;

    /// Rows and panels a tile covers: 24 accumulators, each weight
    /// register used for eight rows. Four rows by four panels, as before,
    /// read twice the weight bytes per product, and the feed-forward
    /// layer's 96 KB panels stream from L2: 8 x 3 took 7% less CPU on
    /// regex-automata util/ (8 x 2: 3% less).
    const ROWS: usize = 8;
    const PANELS: usize = 3;

    compiled_for!("avx512f,avx512bw");

    /// As `portable_multiply`, with `vpdpbusd` on tiles of `ROWS` rows by
    /// `PANELS` panels.
    ///
    /// # Safety
    /// The CPU must have AVX-512 F, BW and VNNI; `qx` holds `rows * k4`
    /// bytes, `packed` `panels * k4 * PANEL` and `acc` `rows * panels *
    /// PANEL`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn multiply(
        qx: &[u8],
        rows: usize,
        k4: usize,
        packed: &[i8],
        panels: usize,
        acc: &mut [i32],
    ) {
        debug_assert!(qx.len() >= rows * k4);
        debug_assert!(packed.len() >= panels * k4 * PANEL);
        debug_assert!(acc.len() >= rows * panels * PANEL);
        let blocks = k4 / 4;
        let width = panels * PANEL;
        let panel_bytes = blocks * PANEL * 4;
        let mut panel = 0;
        while panel < panels {
            let w = packed.as_ptr().add(panel * panel_bytes);
            let group = (panels - panel).min(PANELS);
            let mut r = 0;
            while r < rows {
                let x = qx.as_ptr().add(r * k4);
                let c = acc.as_mut_ptr().add(r * width + panel * PANEL);
                let left = rows - r;
                match group {
                    1 => strip::<1>(left, x, k4, w, panel_bytes, blocks, c, width),
                    2 => strip::<2>(left, x, k4, w, panel_bytes, blocks, c, width),
                    _ => strip::<PANELS>(left, x, k4, w, panel_bytes, blocks, c, width),
                }
                r += ROWS;
            }
            panel += group;
        }
    }

    /// One tile of `min(left, ROWS)` rows by `P` panels (see `tile`).
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    #[inline]
    #[allow(clippy::too_many_arguments)]
    unsafe fn strip<const P: usize>(
        left: usize,
        x: *const u8,
        lda: usize,
        w: *const i8,
        panel_bytes: usize,
        blocks: usize,
        c: *mut i32,
        ldc: usize,
    ) {
        match left {
            1 => tile::<1, P>(x, lda, w, panel_bytes, blocks, c, ldc),
            2 => tile::<2, P>(x, lda, w, panel_bytes, blocks, c, ldc),
            3 => tile::<3, P>(x, lda, w, panel_bytes, blocks, c, ldc),
            4 => tile::<4, P>(x, lda, w, panel_bytes, blocks, c, ldc),
            5 => tile::<5, P>(x, lda, w, panel_bytes, blocks, c, ldc),
            6 => tile::<6, P>(x, lda, w, panel_bytes, blocks, c, ldc),
            7 => tile::<7, P>(x, lda, w, panel_bytes, blocks, c, ldc),
            _ => tile::<ROWS, P>(x, lda, w, panel_bytes, blocks, c, ldc),
        }
    }

    /// `R` rows of `x` (stride `lda`) times `P` panels of `w` (stride
    /// `panel_bytes`), stored to `c` (stride `ldc`).
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    #[inline]
    unsafe fn tile<const R: usize, const P: usize>(
        x: *const u8,
        lda: usize,
        w: *const i8,
        panel_bytes: usize,
        blocks: usize,
        c: *mut i32,
        ldc: usize,
    ) {
        let mut sums = [[_mm512_setzero_si512(); P]; R];
        for b in 0..blocks {
            let mut ws = [_mm512_setzero_si512(); P];
            for (p, wv) in ws.iter_mut().enumerate() {
                *wv = _mm512_loadu_si512(w.add(p * panel_bytes + b * PANEL * 4).cast());
            }
            for (i, row) in sums.iter_mut().enumerate() {
                let xv = _mm512_set1_epi32(x.add(i * lda + b * 4).cast::<i32>().read_unaligned());
                for (sum, &wv) in row.iter_mut().zip(&ws) {
                    *sum = _mm512_dpbusd_epi32(*sum, xv, wv);
                }
            }
        }
        for (i, row) in sums.iter().enumerate() {
            for (p, &sum) in row.iter().enumerate() {
                _mm512_storeu_si512(c.add(i * ldc + p * PANEL).cast(), sum);
            }
        }
    }
}

/// The tile walk both 256-bit kernels share: for each panel of `packed`,
/// the rows of `qx` in steps of `step`, calling `tile(rows left, x, w,
/// blocks, c, ldc)` for each (`tile` stores at most `step` rows).
///
/// # Safety
/// `qx` holds `rows * k4` bytes, `packed` `panels * k4 * PANEL` and `acc`
/// `rows * panels * PANEL`; `tile` writes only the rows it is given.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn one_panel_tiles(
    qx: &[u8],
    rows: usize,
    k4: usize,
    packed: &[i8],
    panels: usize,
    acc: &mut [i32],
    step: usize,
    tile: impl Fn(usize, *const u8, *const i8, usize, *mut i32, usize),
) {
    debug_assert!(qx.len() >= rows * k4);
    debug_assert!(packed.len() >= panels * k4 * PANEL);
    debug_assert!(acc.len() >= rows * panels * PANEL);
    let blocks = k4 / 4;
    let width = panels * PANEL;
    let panel_bytes = blocks * PANEL * 4;
    for panel in 0..panels {
        let w = packed.as_ptr().add(panel * panel_bytes);
        let mut r = 0;
        while r < rows {
            let x = qx.as_ptr().add(r * k4);
            let c = acc.as_mut_ptr().add(r * width + panel * PANEL);
            tile(rows - r, x, w, blocks, c, width);
            r += step;
        }
    }
}

/// Defines a 256-bit kernel's `multiply` (the `one_panel_tiles` walk over
/// tiles of at most `$rows` rows by one panel, with a `tile::<R>` for each
/// row count left at the bottom edge) and its `tile::<R>`: `R` rows of `x`
/// (stride `lda`) times one panel of `w`, stored to `c` (stride `ldc`). A
/// block of 4 inputs x 16 columns is two registers, columns 0-7 and 8-15,
/// 4 bytes each; `$step` adds one block's product for one row to `$row`
/// (its two accumulators) from the row's broadcast inputs `$xv` and the
/// block's `$low` and `$high` weights. Only that step differs between the
/// AVX2 and AVX-VNNI kernels.
#[cfg(target_arch = "x86_64")]
macro_rules! one_panel_kernel {
    (
        $features:literal,
        $rows:ident,
        [$($r:literal),*],
        |$row:ident, $xv:ident, $low:ident, $high:ident| $step:block
    ) => {
        /// As `portable_multiply`, on tiles of `ROWS` rows by one panel.
        ///
        /// # Safety
        /// The CPU must have this module's features; `qx` holds `rows * k4`
        /// bytes, `packed` `panels * k4 * PANEL` weights in `[-WEIGHT_MAX,
        /// WEIGHT_MAX]`, `acc` `rows * panels * PANEL`.
        #[target_feature(enable = $features)]
        pub(super) unsafe fn multiply(
            qx: &[u8],
            rows: usize,
            k4: usize,
            packed: &[i8],
            panels: usize,
            acc: &mut [i32],
        ) {
            // SAFETY: as this function's; `tile` writes at most `left` rows.
            super::one_panel_tiles(
                qx,
                rows,
                k4,
                packed,
                panels,
                acc,
                $rows,
                |left, x, w, blocks, c, ldc| match left {
                    $($r => tile::<$r>(x, k4, w, blocks, c, ldc),)*
                    _ => tile::<$rows>(x, k4, w, blocks, c, ldc),
                },
            );
        }

        #[target_feature(enable = $features)]
        #[inline]
        unsafe fn tile<const R: usize>(
            x: *const u8,
            lda: usize,
            w: *const i8,
            blocks: usize,
            c: *mut i32,
            ldc: usize,
        ) {
            let mut sums = [[_mm256_setzero_si256(); 2]; R];
            for b in 0..blocks {
                let $low = _mm256_loadu_si256(w.add(b * PANEL * 4).cast());
                let $high = _mm256_loadu_si256(w.add(b * PANEL * 4 + 32).cast());
                for (i, $row) in sums.iter_mut().enumerate() {
                    let $xv =
                        _mm256_set1_epi32(x.add(i * lda + b * 4).cast::<i32>().read_unaligned());
                    $step
                }
            }
            for (i, row) in sums.iter().enumerate() {
                _mm256_storeu_si256(c.add(i * ldc).cast(), row[0]);
                _mm256_storeu_si256(c.add(i * ldc + 8).cast(), row[1]);
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::PANEL;
    use std::arch::x86_64::*;

    /// Rows a tile covers (with two registers of columns each: eight
    /// accumulators of the sixteen registers).
    const ROWS: usize = 4;

    compiled_for!("avx2,fma");

    one_panel_kernel!("avx2", ROWS, [1, 2, 3], |row, xv, low, high| {
        let ones = _mm256_set1_epi16(1);
        for (sum, &wv) in row.iter_mut().zip(&[low, high]) {
            // x * w, two per 16-bit lane (at most 2 * 255 * 63: no
            // saturation), then four per 32-bit lane.
            let pairs = _mm256_maddubs_epi16(xv, wv);
            *sum = _mm256_add_epi32(*sum, _mm256_madd_epi16(pairs, ones));
        }
    });
}

#[cfg(target_arch = "x86_64")]
mod avxvnni {
    use super::PANEL;
    use std::arch::x86_64::*;

    /// Rows a tile covers: two registers of columns each, twelve
    /// accumulators of the sixteen registers (`vpdpbusd` needs no
    /// temporaries, unlike AVX2's three-instruction product).
    const ROWS: usize = 6;

    one_panel_kernel!(
        "avx2,avxvnni",
        ROWS,
        [1, 2, 3, 4, 5],
        |row, xv, low, high| {
            row[0] = _mm256_dpbusd_avx_epi32(row[0], xv, low);
            row[1] = _mm256_dpbusd_avx_epi32(row[1], xv, high);
        }
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic pseudo-random sequence in [-1, 1).
    fn noise(len: usize, seed: u64) -> Vec<f32> {
        let mut state = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..len)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    fn f32_reference(x: &[f32], w: &[f32], b: &[f32], k: usize, n: usize) -> Vec<f32> {
        let rows = x.len() / k;
        let mut out = vec![0f32; rows * n];
        for r in 0..rows {
            for j in 0..n {
                let mut sum = b[j] as f64;
                for kk in 0..k {
                    sum += x[r * k + kk] as f64 * w[kk * n + j] as f64;
                }
                out[r * n + j] = sum as f32;
            }
        }
        out
    }

    #[test]
    fn int8_product_is_close_to_f32_on_odd_shapes() {
        // k not a multiple of 4, n not of 64, rows not of the tile or job.
        for (rows, k, n) in [(1, 7, 5), (37, 30, 70), (70, 384, 100)] {
            let x = noise(rows * k, 1);
            let w = noise(k * n, 2);
            let b = noise(n, 3);
            let layer = QuantLinear::new(&w, k, n, &b);
            assert_eq!((layer.inputs(), layer.outputs()), (k, n));
            let got = layer.forward_with(&x, Kernel::Portable);
            let want = f32_reference(&x, &w, &b, k, n);
            let worst = got
                .iter()
                .zip(&want)
                .map(|(g, w)| (g - w).abs())
                .fold(0f32, f32::max);
            // A 7-bit and an 8-bit rounding per product of values in [-1, 1].
            assert!(worst < 0.02 * (k as f32).sqrt(), "{rows}x{k}x{n}: {worst}");
        }
    }

    #[test]
    fn native_kernels_equal_the_portable_one_bit_for_bit() {
        let kernels = QuantLinear::native_kernels();
        if kernels.is_empty() {
            eprintln!("skipped: this CPU has no native int8 kernel");
            return;
        }
        for (rows, k, n) in [
            (1, 384, 384),
            (6, 30, 70),
            (5, 20, 50),
            (71, 384, 1152),
            (33, 1536, 384),
        ] {
            let mut x = noise(rows * k, 4);
            // Saturated activations: the pairs an unsigned x signed
            // 16-bit product would overflow on.
            x[..k.min(8)].fill(1.0);
            let w = noise(k * n, 5);
            let b = noise(n, 6);
            let layer = QuantLinear::new(&w, k, n, &b);
            let want = layer.forward_with(&x, Kernel::Portable);
            for &kernel in kernels {
                assert_eq!(
                    layer.forward_with(&x, kernel),
                    want,
                    "{kernel:?} {rows}x{k}x{n}"
                );
            }
        }
    }

    #[test]
    fn extreme_codes_stay_exact_in_every_kernel() {
        // Every pair at the bound: activation code 255 times weight +-63,
        // `2 * 255 * 63` per 16-bit lane, the most AVX2's saturating pair
        // sum must hold.
        let (rows, k, n) = (5, 64, 64);
        let x = vec![1.0f32; rows * k];
        for sign in [1.0f32, -1.0] {
            let w = vec![sign; k * n];
            let b = vec![0.0f32; n];
            let layer = QuantLinear::new(&w, k, n, &b);
            let want = layer.forward_with(&x, Kernel::Portable);
            assert!(want.iter().all(|&v| (v - sign * k as f32).abs() < 1e-3));
            for &kernel in QuantLinear::native_kernels() {
                assert_eq!(layer.forward_with(&x, kernel), want, "{kernel:?}");
            }
        }
    }

    #[test]
    fn a_row_above_zero_gets_every_code() {
        // After GELU a row barely goes below 0: the asymmetric code spends
        // its 256 steps on [min, max], not on a symmetric [-max, max].
        let x: Vec<f32> = (0..256).map(|i| i as f32 / 255.0 * 4.0 - 0.17).collect();
        let mut q = vec![0u8; 256];
        let mut codes = [RowCode::default()];
        quantise(&x, 256, 256, &mut q, &mut codes);
        assert_eq!((q[0], q[255]), (0, 255));
        let worst = x
            .iter()
            .zip(&q)
            .map(|(&v, &c)| (v - codes[0].step * (i32::from(c) - codes[0].zero) as f32).abs())
            .fold(0f32, f32::max);
        assert!(worst <= codes[0].step / 2.0 + 1e-6, "{worst}");
        assert!(codes[0].step < 4.17 / 254.0, "finer than a symmetric code");
    }

    #[test]
    fn fused_gelu_equals_gelu_after_the_product() {
        let (rows, k, n) = (70, 384, 100);
        let x = noise(rows * k, 9);
        let w = noise(k * n, 10);
        let b = noise(n, 11);
        let mut want = QuantLinear::new(&w, k, n, &b).forward(&x);
        crate::kernels::gelu_erf_par(&mut want);
        let fused = QuantLinear::new(&w, k, n, &b).with_gelu();
        assert_eq!(fused.forward(&x), want);
    }

    #[test]
    fn zero_and_non_finite_rows_do_not_poison_the_others() {
        let (k, n) = (8, 16);
        let w = noise(k * n, 7);
        let b = vec![0.5f32; n];
        let layer = QuantLinear::new(&w, k, n, &b);
        let mut x = noise(2 * k, 8);
        x[..k].fill(0.0);
        let out = layer.forward_with(&x, Kernel::Portable);
        assert!(
            out[..n].iter().all(|&v| v == 0.5),
            "a zero row gives the bias"
        );
        let want = f32_reference(&x[k..], &w, &b, k, n);
        for (g, w) in out[n..].iter().zip(&want) {
            assert!((g - w).abs() < 0.05, "{g} vs {w}");
        }
    }
}
