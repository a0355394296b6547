//! Element-wise and attention kernels of the encoder, on plain f32 slices:
//! exact (erf) GELU, softmax and per-text multi-head attention over packed
//! rows.
//!
//! Each kernel is written once as straight-line loops that LLVM
//! vectorises, and built three times: for the baseline target, for AVX2 +
//! FMA and for AVX-512, the widest this CPU has chosen at run time. `exp` is a polynomial here rather than libm's,
//! so those loops vectorise at all (libm's `expf` is a call per element and
//! was an eighth of the encoder's time). The exception: LLVM leaves
//! attention's score and context block loops scalar in the AVX2 build and
//! (rustc 1.95) in the AVX-512 one, with its sums spilled to the stack, so
//! `avx2` has them written with intrinsics, used on every CPU with AVX2
//! and FMA (half the encoder's time went to the scalar loops on an
//! AVX-512 Xeon).
//!
//! Never: allocate per element, or read outside the slices given.

use rayon::prelude::*;

pub(crate) use generic::span_with_zero;

/// Elements per parallel GELU job.
const GELU_JOB: usize = 16 * 1024;

/// The widest instruction set of the kernels' builds this CPU runs
/// (checked once): 0 baseline, 1 AVX2 + FMA, 2 AVX-512 as well; never
/// above [`cap`].
fn level() -> u8 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        use std::sync::OnceLock;
        static LEVEL: OnceLock<u8> = OnceLock::new();
        *LEVEL.get_or_init(|| {
            let found = match (has!("avx2") && has!("fma"), has!("avx512f")) {
                (true, true) => 2,
                (true, false) => 1,
                _ => 0,
            };
            found.min(cap())
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        0
    }
}

/// The widest instruction set the encoder may use, from `QUARRY_CPU`
/// (`avx2`: AVX2 and FMA at most, `avx2-vnni`: the same plus AVX-VNNI's
/// 256-bit int8 product, `baseline`: plain x86-64; anything else or
/// unset: no cap), read once. For measuring on an AVX-512 machine what
/// an AVX2-only one runs (same instructions, though not the same clock or
/// caches).
pub(crate) fn cap() -> u8 {
    use std::sync::OnceLock;
    static CAP: OnceLock<u8> = OnceLock::new();
    *CAP.get_or_init(|| match std::env::var("QUARRY_CPU").as_deref() {
        Ok("avx2" | "avx2-vnni") => 1,
        Ok("baseline") => 0,
        _ => u8::MAX,
    })
}

/// Whether `QUARRY_CPU` leaves AVX-VNNI to the int8 product (all but
/// `avx2` and `baseline`, which stand for CPUs without it).
pub(crate) fn avx_vnni_allowed() -> bool {
    !matches!(
        std::env::var("QUARRY_CPU").as_deref(),
        Ok("avx2" | "baseline")
    )
}

/// Defines `$name` to run `generic::$name` built for the widest
/// instruction set this CPU has. The `FMA` parameter says whether
/// `mul_add` is one instruction there (a libm call on the x86-64
/// baseline, so that build multiplies and adds instead).
macro_rules! dispatch {
    ($name:ident ( $($arg:ident : $ty:ty),* )) => {
        pub(crate) fn $name($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2,fma,avx512f")]
                unsafe fn wide($($arg: $ty),*) {
                    generic::$name::<true>($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn fast($($arg: $ty),*) {
                    generic::$name::<true>($($arg),*)
                }
                match level() {
                    // SAFETY: `level` found these features on this CPU.
                    2 => return unsafe { wide($($arg),*) },
                    // SAFETY: as above.
                    1 => return unsafe { fast($($arg),*) },
                    _ => {}
                }
                generic::$name::<false>($($arg),*)
            }
            #[cfg(not(target_arch = "x86_64"))]
            {
                generic::$name::<true>($($arg),*)
            }
        }
    };
}

dispatch!(gelu_erf_in_place(xs: &mut [f32]));
dispatch!(add_layer_norm(rows: &mut [f32], residual: &[f32], weight: &[f32], bias: &[f32], eps: f32));

/// GELU over `xs`, split over the calling rayon pool.
pub(crate) fn gelu_erf_par(xs: &mut [f32]) {
    xs.par_chunks_mut(GELU_JOB).for_each(gelu_erf_in_place);
}

/// Multi-head self-attention of each text on its own, no mask.
///
/// `qkv` holds one row of `3 * heads * head_dim` per token, the texts'
/// rows one after another (`lengths`), each row query, key and value, each
/// of those `heads` blocks of `head_dim`. `out` receives one row of
/// `heads * head_dim` per token: per head, the softmax(q k^T * scale)
/// weighted sum of values. Texts run in parallel on the calling pool.
pub(crate) fn attention(
    qkv: &[f32],
    lengths: &[usize],
    heads: usize,
    head_dim: usize,
    out: &mut [f32],
) {
    let hidden = heads * head_dim;
    let rows: usize = lengths.iter().sum();
    assert_eq!(qkv.len(), rows * 3 * hidden, "attention: qkv shape");
    assert_eq!(out.len(), rows * hidden, "attention: output shape");
    let mut jobs = Vec::with_capacity(lengths.len());
    let (mut qkv_rest, mut out_rest) = (qkv, out);
    for &len in lengths {
        let (q, q_next) = qkv_rest.split_at(len * 3 * hidden);
        let (o, o_next) = std::mem::take(&mut out_rest).split_at_mut(len * hidden);
        jobs.push((q, o, len));
        (qkv_rest, out_rest) = (q_next, o_next);
    }
    jobs.into_par_iter()
        .for_each(|(qkv, out, len)| text_attention(qkv, len, heads, head_dim, out));
}

dispatch!(text_attention(qkv: &[f32], len: usize, heads: usize, head_dim: usize, out: &mut [f32]));

/// The two inner loops of attention written with AVX2 + FMA intrinsics.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// Floats per register.
    const W: usize = 8;

    /// `scores[j] = scale * q . k_j` for every `j < len_p`, where
    /// `keys_t` holds `query.len()` rows of `len_p` (keys transposed).
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA; `len_p` is a multiple of 8,
    /// `keys_t` holds `query.len() * len_p` floats and `scores` `len_p`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn scores(
        query: &[f32],
        keys_t: &[f32],
        len_p: usize,
        scale: f32,
        scores: &mut [f32],
    ) {
        debug_assert_eq!(len_p % W, 0);
        debug_assert!(keys_t.len() >= query.len() * len_p && scores.len() >= len_p);
        let keys = keys_t.as_ptr();
        let out = scores.as_mut_ptr();
        let factor = _mm256_set1_ps(scale);
        let mut j = 0;
        // Four registers of keys at a time, then one.
        while j + 4 * W <= len_p {
            let mut acc = [_mm256_setzero_ps(); 4];
            for (d, &q) in query.iter().enumerate() {
                let q = _mm256_set1_ps(q);
                let row = keys.add(d * len_p + j);
                for (b, a) in acc.iter_mut().enumerate() {
                    *a = _mm256_fmadd_ps(q, _mm256_loadu_ps(row.add(b * W)), *a);
                }
            }
            for (b, a) in acc.iter().enumerate() {
                _mm256_storeu_ps(out.add(j + b * W), _mm256_mul_ps(*a, factor));
            }
            j += 4 * W;
        }
        while j < len_p {
            let mut acc = _mm256_setzero_ps();
            for (d, &q) in query.iter().enumerate() {
                let k = _mm256_loadu_ps(keys.add(d * len_p + j));
                acc = _mm256_fmadd_ps(_mm256_set1_ps(q), k, acc);
            }
            _mm256_storeu_ps(out.add(j), _mm256_mul_ps(acc, factor));
            j += W;
        }
    }

    /// `context[d] = sum_j probs[j] * values[j][d]`, where `values` holds
    /// `probs.len()` rows of `dim_p` and `context` is at most `dim_p` long.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA; `dim_p` is a multiple of 8 and
    /// `values` holds `probs.len() * dim_p` floats.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn context(probs: &[f32], values: &[f32], dim_p: usize, context: &mut [f32]) {
        debug_assert_eq!(dim_p % W, 0);
        debug_assert!(values.len() >= probs.len() * dim_p && context.len() <= dim_p);
        let values = values.as_ptr();
        let mut d = 0;
        while d < context.len() {
            // Up to four registers of columns, over two interleaved
            // halves of the rows so that eight sums are in flight.
            let regs = ((dim_p - d) / W).min(4);
            let mut even = [_mm256_setzero_ps(); 4];
            let mut odd = [_mm256_setzero_ps(); 4];
            let mut j = 0;
            while j + 2 <= probs.len() {
                let (p0, p1) = (_mm256_set1_ps(probs[j]), _mm256_set1_ps(probs[j + 1]));
                let (r0, r1) = (values.add(j * dim_p + d), values.add((j + 1) * dim_p + d));
                for (b, (e, o)) in even.iter_mut().zip(&mut odd).enumerate().take(regs) {
                    *e = _mm256_fmadd_ps(p0, _mm256_loadu_ps(r0.add(b * W)), *e);
                    *o = _mm256_fmadd_ps(p1, _mm256_loadu_ps(r1.add(b * W)), *o);
                }
                j += 2;
            }
            if j < probs.len() {
                let p = _mm256_set1_ps(probs[j]);
                let r = values.add(j * dim_p + d);
                for (b, e) in even.iter_mut().enumerate().take(regs) {
                    *e = _mm256_fmadd_ps(p, _mm256_loadu_ps(r.add(b * W)), *e);
                }
            }
            let mut sums = [0f32; 4 * W];
            for (b, (e, o)) in even.iter().zip(&odd).enumerate().take(regs) {
                _mm256_storeu_ps(sums.as_mut_ptr().add(b * W), _mm256_add_ps(*e, *o));
            }
            let take = (regs * W).min(context.len() - d);
            context[d..d + take].copy_from_slice(&sums[..take]);
            d += regs * W;
        }
    }
}

/// Attention's score and context loops written with AVX-512 intrinsics:
/// twice the lanes of `avx2`'s, and every sum in the same order, so the
/// results are bit-identical to AVX2's. The score loop keeps eight
/// registers of keys in flight, or, where four queries are scored at once
/// (`scores4`, most of every text), shares each key load among the four
/// (a cold `quarry index` of regex-automata on an AMD EPYC: 30.3 -> 28.3 s,
/// means of three alternating runs); the context loop takes two queries
/// at a time (one query at 16 lanes has too few sums in flight: a version with
/// four row phases instead measured slower, 8.5% -> 9.8% of `quarry
/// index`; two queries took it from 9.5% to 3.5%).
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    /// Floats per register.
    const W: usize = 16;

    /// `NB` registers of scores from key `j`: `out[j..] = scale * q . k`.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn score_block<const NB: usize>(
        query: &[f32],
        keys: *const f32,
        len_p: usize,
        j: usize,
        factor: __m512,
        out: *mut f32,
    ) {
        let mut acc = [_mm512_setzero_ps(); NB];
        for (d, &q) in query.iter().enumerate() {
            let q = _mm512_set1_ps(q);
            let row = keys.add(d * len_p + j);
            for (b, a) in acc.iter_mut().enumerate() {
                *a = _mm512_fmadd_ps(q, _mm512_loadu_ps(row.add(b * W)), *a);
            }
        }
        for (b, a) in acc.iter().enumerate() {
            _mm512_storeu_ps(out.add(j + b * W), _mm512_mul_ps(*a, factor));
        }
    }

    /// `score_block` for four queries at once: each register of keys is
    /// loaded once for all four, so the loop does two multiply-adds per
    /// load where one query does about one (loads, not multiply-adds,
    /// bounded the one-query loop). Every score sums the same products in
    /// the same order as `score_block`'s, so the scores are bit-identical.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn score_block4<const NB: usize>(
        queries: [&[f32]; 4],
        keys: *const f32,
        len_p: usize,
        j: usize,
        factor: __m512,
        outs: [*mut f32; 4],
    ) {
        let mut acc = [[_mm512_setzero_ps(); NB]; 4];
        for d in 0..queries[0].len() {
            let row = keys.add(d * len_p + j);
            let mut k = [_mm512_setzero_ps(); NB];
            for (b, k) in k.iter_mut().enumerate() {
                *k = _mm512_loadu_ps(row.add(b * W));
            }
            for (query, acc) in queries.iter().zip(acc.iter_mut()) {
                let q = _mm512_set1_ps(query[d]);
                for (a, k) in acc.iter_mut().zip(&k) {
                    *a = _mm512_fmadd_ps(q, *k, *a);
                }
            }
        }
        for (out, acc) in outs.iter().zip(&acc) {
            for (b, a) in acc.iter().enumerate() {
                _mm512_storeu_ps(out.add(j + b * W), _mm512_mul_ps(*a, factor));
            }
        }
    }

    /// `scores` for four queries of the same length at once (see
    /// `score_block4`); bit-identical to four calls of `scores`.
    ///
    /// # Safety
    /// As `scores`, for every query and its score row.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn scores4(
        queries: [&[f32]; 4],
        keys_t: &[f32],
        len_p: usize,
        scale: f32,
        scores: [&mut [f32]; 4],
    ) {
        debug_assert_eq!(len_p % W, 0);
        let dim = queries[0].len();
        debug_assert!(queries.iter().all(|q| q.len() == dim));
        debug_assert!(keys_t.len() >= dim * len_p && scores.iter().all(|s| s.len() >= len_p));
        let keys = keys_t.as_ptr();
        let [a, b, c, d] = scores;
        let outs = [
            a.as_mut_ptr(),
            b.as_mut_ptr(),
            c.as_mut_ptr(),
            d.as_mut_ptr(),
        ];
        let factor = _mm512_set1_ps(scale);
        let mut j = 0;
        while j + 4 * W <= len_p {
            score_block4::<4>(queries, keys, len_p, j, factor, outs);
            j += 4 * W;
        }
        while j < len_p {
            score_block4::<1>(queries, keys, len_p, j, factor, outs);
            j += W;
        }
    }

    /// `avx2::context` for two queries over the same values, 16 lanes:
    /// each value row is loaded once for both. Every output element sums
    /// exactly as `avx2::context` sums it (its even rows in order, its odd
    /// rows in order, the last row of an odd count with the even ones,
    /// then even + odd), so the results are bit-identical; with two
    /// queries the loop has eight independent sums in flight, where one
    /// query at 16 lanes would wait on four.
    ///
    /// # Safety
    /// The CPU must have AVX-512 F; `dim_p` is a multiple of 16, `probs_a`
    /// and `probs_b` have the same length, `values` holds that many rows
    /// of `dim_p` floats, and both contexts are at most `dim_p` long.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn context2(
        probs_a: &[f32],
        probs_b: &[f32],
        values: &[f32],
        dim_p: usize,
        context_a: &mut [f32],
        context_b: &mut [f32],
    ) {
        debug_assert_eq!(dim_p % W, 0);
        debug_assert_eq!(probs_a.len(), probs_b.len());
        debug_assert!(values.len() >= probs_a.len() * dim_p);
        debug_assert!(context_a.len() <= dim_p && context_b.len() <= dim_p);
        let n = probs_a.len();
        let values = values.as_ptr();
        let mut d = 0;
        while d < context_a.len().max(context_b.len()) {
            // Up to two registers of columns per query and row phase.
            let regs = ((dim_p - d) / W).min(2);
            let zero = _mm512_setzero_ps();
            let (mut even_a, mut odd_a) = ([zero; 2], [zero; 2]);
            let (mut even_b, mut odd_b) = ([zero; 2], [zero; 2]);
            let mut j = 0;
            while j + 2 <= n {
                let (a0, a1) = (_mm512_set1_ps(probs_a[j]), _mm512_set1_ps(probs_a[j + 1]));
                let (b0, b1) = (_mm512_set1_ps(probs_b[j]), _mm512_set1_ps(probs_b[j + 1]));
                let (r0, r1) = (values.add(j * dim_p + d), values.add((j + 1) * dim_p + d));
                for b in 0..regs {
                    let (v0, v1) = (
                        _mm512_loadu_ps(r0.add(b * W)),
                        _mm512_loadu_ps(r1.add(b * W)),
                    );
                    even_a[b] = _mm512_fmadd_ps(a0, v0, even_a[b]);
                    odd_a[b] = _mm512_fmadd_ps(a1, v1, odd_a[b]);
                    even_b[b] = _mm512_fmadd_ps(b0, v0, even_b[b]);
                    odd_b[b] = _mm512_fmadd_ps(b1, v1, odd_b[b]);
                }
                j += 2;
            }
            if j < n {
                let (a, b_) = (_mm512_set1_ps(probs_a[j]), _mm512_set1_ps(probs_b[j]));
                let r = values.add(j * dim_p + d);
                for b in 0..regs {
                    let v = _mm512_loadu_ps(r.add(b * W));
                    even_a[b] = _mm512_fmadd_ps(a, v, even_a[b]);
                    even_b[b] = _mm512_fmadd_ps(b_, v, even_b[b]);
                }
            }
            for (context, even, odd) in [
                (&mut *context_a, &even_a, &odd_a),
                (&mut *context_b, &even_b, &odd_b),
            ] {
                let mut sums = [0f32; 2 * W];
                for b in 0..regs {
                    _mm512_storeu_ps(sums.as_mut_ptr().add(b * W), _mm512_add_ps(even[b], odd[b]));
                }
                if d < context.len() {
                    let take = (regs * W).min(context.len() - d);
                    context[d..d + take].copy_from_slice(&sums[..take]);
                }
            }
            d += regs * W;
        }
    }

    /// Transposes 16 rows of 16 floats in registers: row `i` of the
    /// result holds element `i` of every input row, in row order.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn transpose16(rows: &[__m512; 16]) -> [__m512; 16] {
        let mut t = [_mm512_setzero_ps(); 16];
        for i in 0..8 {
            // Per 128-bit lane: a0 b0 a1 b1, and a2 b2 a3 b3.
            t[2 * i] = _mm512_unpacklo_ps(rows[2 * i], rows[2 * i + 1]);
            t[2 * i + 1] = _mm512_unpackhi_ps(rows[2 * i], rows[2 * i + 1]);
        }
        let mut u = [_mm512_setzero_ps(); 16];
        for i in 0..4 {
            let pd = |v: __m512| _mm512_castps_pd(v);
            let (a, b, c, d) = (t[4 * i], t[4 * i + 1], t[4 * i + 2], t[4 * i + 3]);
            // Lane L of u[4i + k]: column 4L + k of rows 4i..4i+4.
            u[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(a), pd(c)));
            u[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(a), pd(c)));
            u[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(b), pd(d)));
            u[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(b), pd(d)));
        }
        let mut out = [_mm512_setzero_ps(); 16];
        for k in 0..4 {
            // The four row groups' lanes, gathered lane by lane.
            let (g0, g1, g2, g3) = (u[k], u[4 + k], u[8 + k], u[12 + k]);
            let x0 = _mm512_shuffle_f32x4::<0x44>(g0, g1);
            let x1 = _mm512_shuffle_f32x4::<0xEE>(g0, g1);
            let x2 = _mm512_shuffle_f32x4::<0x44>(g2, g3);
            let x3 = _mm512_shuffle_f32x4::<0xEE>(g2, g3);
            out[k] = _mm512_shuffle_f32x4::<0x88>(x0, x2);
            out[4 + k] = _mm512_shuffle_f32x4::<0xDD>(x0, x2);
            out[8 + k] = _mm512_shuffle_f32x4::<0x88>(x1, x3);
            out[12 + k] = _mm512_shuffle_f32x4::<0xDD>(x1, x3);
        }
        out
    }

    /// The keys of one text transposed: `keys_t[c * len_p + j]` is column
    /// `c` of key `j` (`qkv[j * stride + hidden + c]`), in blocks of 16
    /// keys by 16 columns through registers instead of a gather per eight
    /// values. Columns of keys past `len` are left as they are (zero).
    ///
    /// # Safety
    /// The CPU must have AVX-512 F; `hidden` and `len_p` are multiples of
    /// 16, `len <= len_p`, `qkv` holds `len` rows of `stride >= 2 *
    /// hidden` floats and `keys_t` `hidden * len_p`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn transpose_keys(
        qkv: &[f32],
        len: usize,
        hidden: usize,
        stride: usize,
        len_p: usize,
        keys_t: &mut [f32],
    ) {
        debug_assert!(hidden.is_multiple_of(W) && len_p.is_multiple_of(W) && len <= len_p);
        debug_assert!(qkv.len() >= len * stride && stride >= 2 * hidden);
        debug_assert!(keys_t.len() >= hidden * len_p);
        let (src, dst) = (qkv.as_ptr(), keys_t.as_mut_ptr());
        let mut j = 0;
        while j < len {
            let mut c = 0;
            while c < hidden {
                let mut rows = [_mm512_setzero_ps(); 16];
                for (i, row) in rows.iter_mut().enumerate().take(len - j) {
                    *row = _mm512_loadu_ps(src.add((j + i) * stride + hidden + c));
                }
                for (i, column) in transpose16(&rows).iter().enumerate() {
                    _mm512_storeu_ps(dst.add((c + i) * len_p + j), *column);
                }
                c += W;
            }
            j += W;
        }
    }

    /// As `avx2::scores`.
    ///
    /// # Safety
    /// The CPU must have AVX-512 F; `len_p` is a multiple of 16, `keys_t`
    /// holds `query.len() * len_p` floats and `scores` `len_p`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn scores(
        query: &[f32],
        keys_t: &[f32],
        len_p: usize,
        scale: f32,
        scores: &mut [f32],
    ) {
        debug_assert_eq!(len_p % W, 0);
        debug_assert!(keys_t.len() >= query.len() * len_p && scores.len() >= len_p);
        let (keys, out) = (keys_t.as_ptr(), scores.as_mut_ptr());
        let factor = _mm512_set1_ps(scale);
        let mut j = 0;
        while j + 8 * W <= len_p {
            score_block::<8>(query, keys, len_p, j, factor, out);
            j += 8 * W;
        }
        while j + 4 * W <= len_p {
            score_block::<4>(query, keys, len_p, j, factor, out);
            j += 4 * W;
        }
        while j < len_p {
            score_block::<1>(query, keys, len_p, j, factor, out);
            j += W;
        }
    }
}

/// The kernels, generic over the target features they are compiled with.
mod generic {
    /// `a * b + c`, fused where `FMA`.
    #[inline(always)]
    fn madd<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
        if FMA {
            a.mul_add(b, c)
        } else {
            a * b + c
        }
    }

    /// `e^x` for f32, relative error below 3e-7, with `x` clamped to
    /// `[-87, 88]` (so the result is always a normal number).
    #[inline(always)]
    pub(super) fn exp(x: f32) -> f32 {
        const LOG2E: f32 = std::f32::consts::LOG2_E;
        const LN2_HI: f32 = 0.693_145_75;
        const LN2_LO: f32 = 1.428_606_8e-6;
        // 1.5 * 2^23: adding it rounds to an integer held in the low bits.
        const ROUND: f32 = 12_582_912.0;
        let x = x.clamp(-87.0, 88.0);
        let t = x * LOG2E + ROUND;
        let n = t - ROUND;
        let r = (x - n * LN2_HI) - n * LN2_LO;
        // e^r on |r| <= ln 2 / 2, Taylor to degree 6.
        let p = 1.0
            + r * (1.0
                + r * (0.5
                    + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
        let k = (t.to_bits() as i32).wrapping_sub(ROUND.to_bits() as i32);
        let scale = f32::from_bits(((k + 127) << 23) as u32);
        p * scale
    }

    /// erf by Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7).
    #[inline(always)]
    pub(super) fn erf(x: f32) -> f32 {
        const P: f32 = 0.327_591_1;
        const A: [f32; 5] = [
            0.254_829_6,
            -0.284_496_74,
            1.421_413_8,
            -1.453_152,
            1.061_405_4,
        ];
        let ax = x.abs();
        let t = 1.0 / (1.0 + P * ax);
        let poly = t * (A[0] + t * (A[1] + t * (A[2] + t * (A[3] + t * A[4]))));
        let y = 1.0 - poly * exp(-ax * ax);
        y.copysign(x)
    }

    /// `x * (1 + erf(x / sqrt 2)) / 2`.
    #[inline(always)]
    pub(super) fn gelu_erf(x: f32) -> f32 {
        0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
    }

    #[inline(always)]
    pub(super) fn gelu_erf_in_place<const FMA: bool>(xs: &mut [f32]) {
        for x in xs {
            *x = gelu_erf(*x);
        }
    }

    /// Lanes of the reductions below: the loops over them vectorise,
    /// where a single running float would be a sequential chain.
    const LANES: usize = 16;

    /// The largest element (`-inf` for none; NaN elements are skipped).
    #[inline(always)]
    fn max(xs: &[f32]) -> f32 {
        let mut lanes = [f32::NEG_INFINITY; LANES];
        let mut chunks = xs.chunks_exact(LANES);
        for chunk in &mut chunks {
            for (m, &v) in lanes.iter_mut().zip(chunk) {
                *m = m.max(v);
            }
        }
        let tail = chunks
            .remainder()
            .iter()
            .fold(f32::NEG_INFINITY, |m, &v| m.max(v));
        lanes.iter().fold(tail, |m, &v| m.max(v))
    }

    /// The smallest and the largest value, with 0 among the values (so
    /// `(0, 0)` for none); NaN is passed over.
    #[inline(always)]
    pub(crate) fn span_with_zero(xs: &[f32]) -> (f32, f32) {
        let mut low = [0f32; LANES];
        let mut high = [0f32; LANES];
        let mut chunks = xs.chunks_exact(LANES);
        for chunk in &mut chunks {
            // Comparisons rather than `f32::min`, whose NaN rule keeps
            // LLVM from a plain `vminps`.
            for ((l, h), &v) in low.iter_mut().zip(high.iter_mut()).zip(chunk) {
                *l = if v < *l { v } else { *l };
                *h = if v > *h { v } else { *h };
            }
        }
        let fold = |(l, h): (f32, f32), v: f32| (l.min(v), h.max(v));
        let tail = chunks.remainder().iter().copied().fold((0f32, 0f32), fold);
        let tail = low.iter().copied().fold(tail, |(l, h), v| (l.min(v), h));
        high.iter().copied().fold(tail, |(l, h), v| (l, h.max(v)))
    }

    #[inline(always)]
    fn sum(xs: &[f32]) -> f32 {
        let mut lanes = [0f32; LANES];
        let mut chunks = xs.chunks_exact(LANES);
        for chunk in &mut chunks {
            for (s, &v) in lanes.iter_mut().zip(chunk) {
                *s += v;
            }
        }
        let tail: f32 = chunks.remainder().iter().sum();
        lanes.iter().sum::<f32>() + tail
    }

    #[inline(always)]
    pub(super) fn softmax_in_place<const FMA: bool>(xs: &mut [f32]) {
        let max = max(xs);
        for x in xs.iter_mut() {
            *x = exp(*x - max);
        }
        let inv = 1.0 / sum(xs);
        for x in xs {
            *x *= inv;
        }
    }

    /// Each row of `rows` (rows of `weight.len()`) becomes
    /// `layer_norm(row + residual_row) * weight + bias`, in candle's
    /// arithmetic exactly (`candle_nn::ops::layer_norm`: one running sum
    /// and sum of squares per row, in element order, the variance as
    /// `E[x^2] - E[x]^2`; no fused multiply-adds), so the fused layers'
    /// vectors equal the tensor path's bit for bit. Rows go eight at a
    /// time, so eight independent sums are in flight instead of one
    /// chain of dependent additions.
    #[inline(always)]
    pub(super) fn add_layer_norm<const FMA: bool>(
        rows: &mut [f32],
        residual: &[f32],
        weight: &[f32],
        bias: &[f32],
        eps: f32,
    ) {
        const GROUP: usize = 8;
        let n = weight.len();
        if n == 0 {
            return;
        }
        for (x, &r) in rows.iter_mut().zip(residual) {
            *x += r;
        }
        let mut groups = rows.chunks_exact_mut(n * GROUP);
        for group in &mut groups {
            norm_rows::<GROUP>(group, weight, bias, eps);
        }
        for row in groups.into_remainder().chunks_exact_mut(n) {
            norm_rows::<1>(row, weight, bias, eps);
        }
    }

    /// Layer norm of `G` consecutive rows of `weight.len()` (see
    /// `add_layer_norm`).
    #[inline(always)]
    fn norm_rows<const G: usize>(rows: &mut [f32], weight: &[f32], bias: &[f32], eps: f32) {
        let n = weight.len();
        let mut sum = [0f32; G];
        let mut sum2 = [0f32; G];
        {
            let row: [&[f32]; G] = std::array::from_fn(|g| &rows[g * n..][..n]);
            // One index walks all G rows in step.
            #[allow(clippy::needless_range_loop)]
            for j in 0..n {
                for g in 0..G {
                    let v = row[g][j];
                    sum[g] += v;
                    sum2[g] += v * v;
                }
            }
        }
        for (g, row) in rows.chunks_exact_mut(n).enumerate() {
            let mean = sum[g] / n as f32;
            let variance = sum2[g] / n as f32 - mean * mean;
            let inv_std = (variance + eps).sqrt().recip();
            for ((x, &w), &b) in row.iter_mut().zip(weight).zip(bias) {
                *x = (*x - mean) * inv_std * w + b;
            }
        }
    }

    #[inline(always)]
    pub(super) fn text_attention<const FMA: bool>(
        qkv: &[f32],
        len: usize,
        heads: usize,
        head_dim: usize,
        out: &mut [f32],
    ) {
        let hidden = heads * head_dim;
        let stride = 3 * hidden;
        let scale = 1.0 / (head_dim as f32).sqrt();
        // Keys transposed (hidden x padded len), read column by column so
        // the writes are sequential; per head, values (len x padded
        // head_dim). Zero padding to whole blocks of LANES lets the block
        // loops below keep their sums in registers.
        let len_p = len.div_ceil(LANES) * LANES;
        let dim_p = head_dim.div_ceil(LANES) * LANES;
        let mut keys_t = vec![0f32; hidden * len_p];
        // LLVM leaves the block loops below scalar when built for AVX2,
        // and (with rustc 1.95) for AVX-512 too, spilling its sums to the
        // stack: wherever AVX2 and FMA exist, hand-written kernels take
        // over.
        #[cfg(target_arch = "x86_64")]
        let native = if FMA { super::level() } else { 0 };
        #[cfg(target_arch = "x86_64")]
        let blocked = native == 2 && hidden.is_multiple_of(LANES);
        #[cfg(not(target_arch = "x86_64"))]
        let blocked = false;
        if blocked {
            // SAFETY: `native` is 2, so the CPU has AVX-512 F; `hidden`
            // and `len_p` are multiples of 16 and the slices have the
            // shapes built above.
            #[cfg(target_arch = "x86_64")]
            unsafe {
                super::avx512::transpose_keys(qkv, len, hidden, stride, len_p, &mut keys_t)
            };
        } else {
            transpose_keys(qkv, hidden, stride, len_p, &mut keys_t);
        }
        let mut values = vec![0f32; len * dim_p];
        let mut scores = vec![0f32; len_p];
        #[cfg(target_arch = "x86_64")]
        let (mut scores_b, mut scores_c, mut scores_d) =
            (vec![0f32; len_p], vec![0f32; len_p], vec![0f32; len_p]);
        for h in 0..heads {
            for (value, row) in values.chunks_exact_mut(dim_p).zip(qkv.chunks_exact(stride)) {
                value[..head_dim].copy_from_slice(&row[2 * hidden + h * head_dim..][..head_dim]);
            }
            let keys = &keys_t[h * head_dim * len_p..][..head_dim * len_p];
            // Queries in pairs where AVX-512 runs the two-query context
            // loop (bit-identical to the one-query loop).
            #[cfg(target_arch = "x86_64")]
            let paired = if native == 2 { len / 2 * 2 } else { 0 };
            #[cfg(not(target_arch = "x86_64"))]
            let paired = 0;
            // And the scores of four queries at a time (bit-identical to
            // one at a time).
            #[cfg(target_arch = "x86_64")]
            let quads = if native == 2 { len / 4 * 4 } else { 0 };
            #[cfg(target_arch = "x86_64")]
            for i in (0..quads).step_by(4) {
                let query = |i: usize| &qkv[i * stride + h * head_dim..][..head_dim];
                let (first, rest) = out[i * hidden..].split_at_mut(hidden);
                let (second, rest) = rest.split_at_mut(hidden);
                let (third, fourth) = rest.split_at_mut(hidden);
                let queries = [query(i), query(i + 1), query(i + 2), query(i + 3)];
                // SAFETY: `native` is 2, so the CPU has AVX-512 F (and
                // AVX2 and FMA); the slices have the shapes built above
                // (`len_p` and `dim_p` are multiples of 16).
                unsafe {
                    super::avx512::scores4(
                        queries,
                        keys,
                        len_p,
                        scale,
                        [&mut scores, &mut scores_b, &mut scores_c, &mut scores_d],
                    );
                    for row in [&mut scores, &mut scores_b, &mut scores_c, &mut scores_d] {
                        softmax_in_place::<FMA>(&mut row[..len]);
                    }
                    let head = h * head_dim..(h + 1) * head_dim;
                    super::avx512::context2(
                        &scores[..len],
                        &scores_b[..len],
                        &values,
                        dim_p,
                        &mut first[head.clone()],
                        &mut second[head.clone()],
                    );
                    super::avx512::context2(
                        &scores_c[..len],
                        &scores_d[..len],
                        &values,
                        dim_p,
                        &mut third[head.clone()],
                        &mut fourth[head],
                    );
                }
            }
            #[cfg(target_arch = "x86_64")]
            for i in (quads..paired).step_by(2) {
                let query = |i: usize| &qkv[i * stride + h * head_dim..][..head_dim];
                let (first, second) = out[i * hidden..].split_at_mut(hidden);
                let context_a = &mut first[h * head_dim..][..head_dim];
                let context_b = &mut second[h * head_dim..][..head_dim];
                // SAFETY: `native` is 2, so the CPU has AVX-512 F (and
                // AVX2 and FMA); the slices have the shapes built above
                // (`len_p` and `dim_p` are multiples of 16).
                unsafe {
                    super::avx512::scores(query(i), keys, len_p, scale, &mut scores);
                    super::avx512::scores(query(i + 1), keys, len_p, scale, &mut scores_b);
                    softmax_in_place::<FMA>(&mut scores[..len]);
                    softmax_in_place::<FMA>(&mut scores_b[..len]);
                    super::avx512::context2(
                        &scores[..len],
                        &scores_b[..len],
                        &values,
                        dim_p,
                        context_a,
                        context_b,
                    );
                }
            }
            for (i, row) in qkv.chunks_exact(stride).enumerate().skip(paired) {
                let query = &row[h * head_dim..][..head_dim];
                let context = &mut out[i * hidden + h * head_dim..][..head_dim];
                #[cfg(target_arch = "x86_64")]
                if native >= 1 {
                    // SAFETY: `level` found AVX2 and FMA, and AVX-512 F
                    // where `native` is 2; the slices have the shapes built
                    // above (`len_p` and `dim_p` are multiples of 16).
                    unsafe {
                        if native == 2 {
                            super::avx512::scores(query, keys, len_p, scale, &mut scores);
                        } else {
                            super::avx2::scores(query, keys, len_p, scale, &mut scores);
                        }
                        softmax_in_place::<FMA>(&mut scores[..len]);
                        super::avx2::context(&scores[..len], &values, dim_p, context);
                    }
                    continue;
                }
                let blocks = len_p / LANES;
                let mut block = 0;
                while block + 4 <= blocks {
                    score_blocks::<4, FMA>(query, keys, len_p, block, scale, &mut scores);
                    block += 4;
                }
                while block < blocks {
                    score_blocks::<1, FMA>(query, keys, len_p, block, scale, &mut scores);
                    block += 1;
                }
                softmax_in_place::<FMA>(&mut scores[..len]);
                let mut block = 0;
                while block < dim_p / LANES {
                    if block + 2 <= dim_p / LANES {
                        context_blocks::<2, FMA>(&scores[..len], &values, dim_p, block, context);
                        block += 2;
                    } else {
                        context_blocks::<1, FMA>(&scores[..len], &values, dim_p, block, context);
                        block += 1;
                    }
                }
            }
        }
    }

    /// The keys of one text transposed, plainly: `keys_t[c * len_p + j]`
    /// is column `c` of key `j` (`qkv[j * stride + hidden + c]`).
    #[inline(always)]
    pub(super) fn transpose_keys(
        qkv: &[f32],
        hidden: usize,
        stride: usize,
        len_p: usize,
        keys_t: &mut [f32],
    ) {
        for (c, column) in keys_t.chunks_exact_mut(len_p).enumerate() {
            for (k, row) in column.iter_mut().zip(qkv.chunks_exact(stride)) {
                *k = row[hidden + c];
            }
        }
    }

    /// Scores `NB` blocks of keys from `first`: `scores[j] = scale * q . k_j`,
    /// with `NB` independent sums in flight.
    #[inline(always)]
    fn score_blocks<const NB: usize, const FMA: bool>(
        query: &[f32],
        keys_t: &[f32],
        len_p: usize,
        first: usize,
        scale: f32,
        scores: &mut [f32],
    ) {
        let mut acc = [[0f32; LANES]; NB];
        for (&q, keys) in query.iter().zip(keys_t.chunks_exact(len_p)) {
            for (b, acc) in acc.iter_mut().enumerate() {
                let keys = &keys[(first + b) * LANES..][..LANES];
                for (a, &k) in acc.iter_mut().zip(keys) {
                    *a = madd::<FMA>(q, k, *a);
                }
            }
        }
        for (b, acc) in acc.iter().enumerate() {
            for (s, a) in scores[(first + b) * LANES..][..LANES].iter_mut().zip(acc) {
                *s = a * scale;
            }
        }
    }

    /// `NB` blocks of the context from `first`: `sum_j p_j v_j`, over two
    /// interleaved halves of `j` so that `2 * NB` sums are in flight.
    #[inline(always)]
    fn context_blocks<const NB: usize, const FMA: bool>(
        probs: &[f32],
        values: &[f32],
        dim_p: usize,
        first: usize,
        context: &mut [f32],
    ) {
        #[inline(always)]
        fn add<const NB: usize, const FMA: bool>(
            acc: &mut [[f32; LANES]; NB],
            p: f32,
            value: &[f32],
            first: usize,
        ) {
            for (b, acc) in acc.iter_mut().enumerate() {
                let value = &value[(first + b) * LANES..][..LANES];
                for (a, &v) in acc.iter_mut().zip(value) {
                    *a = madd::<FMA>(p, v, *a);
                }
            }
        }
        let (mut even, mut odd) = ([[0f32; LANES]; NB], [[0f32; LANES]; NB]);
        let pairs = probs.chunks_exact(2).zip(values.chunks_exact(2 * dim_p));
        for (p, value) in pairs {
            add::<NB, FMA>(&mut even, p[0], &value[..dim_p], first);
            add::<NB, FMA>(&mut odd, p[1], &value[dim_p..], first);
        }
        if probs.len() % 2 == 1 {
            let last = probs.len() - 1;
            add::<NB, FMA>(
                &mut even,
                probs[last],
                &values[last * dim_p..][..dim_p],
                first,
            );
        }
        for (b, (even, odd)) in even.iter().zip(&odd).enumerate() {
            let start = (first + b) * LANES;
            if start >= context.len() {
                break;
            }
            let end = (start + LANES).min(context.len());
            for ((c, e), o) in context[start..end].iter_mut().zip(even).zip(odd) {
                *c = e + o;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_close_to_libm() {
        let mut worst = 0f64;
        for i in -8700..=8800 {
            let x = i as f32 / 100.0;
            let want = (x as f64).exp();
            let got = generic::exp(x) as f64;
            worst = worst.max(((got - want) / want).abs());
        }
        assert!(worst < 3e-7, "max relative error {worst}");
        assert!(generic::exp(-1000.0) < 1e-37);
        assert!(generic::exp(1000.0).is_finite());
    }

    #[test]
    fn erf_is_close_to_the_series() {
        // erf by its Taylor series in f64, fine for |x| <= 3.
        fn series(x: f64) -> f64 {
            let mut term = x;
            let mut sum = x;
            for n in 1..200 {
                term *= -x * x / n as f64;
                sum += term / (2 * n + 1) as f64;
            }
            sum * 2.0 / std::f64::consts::PI.sqrt()
        }
        let mut worst = 0f64;
        for i in -3000..=3000 {
            let x = i as f64 / 1000.0;
            worst = worst.max((generic::erf(x as f32) as f64 - series(x)).abs());
        }
        assert!(worst < 5e-7, "max error {worst}");
        assert_eq!(generic::erf(10.0), 1.0);
        assert_eq!(generic::erf(-10.0), -1.0);
        assert_eq!(generic::gelu_erf(0.0), 0.0);
    }

    #[test]
    fn dispatched_gelu_equals_the_baseline_build() {
        let xs: Vec<f32> = (-5000..5000).map(|i| i as f32 / 700.0).collect();
        let mut fast = xs.clone();
        gelu_erf_par(&mut fast);
        let mut slow = xs.clone();
        generic::gelu_erf_in_place::<false>(&mut slow);
        for ((f, s), x) in fast.iter().zip(&slow).zip(&xs) {
            assert!((f - s).abs() <= 1e-6 * s.abs().max(1.0), "{x}: {f} vs {s}");
        }
    }

    /// Attention in f64, text by text, head by head, straight from the
    /// definition.
    fn reference(qkv: &[f32], lengths: &[usize], heads: usize, hd: usize) -> Vec<f32> {
        let hidden = heads * hd;
        let mut out = vec![0f32; qkv.len() / 3];
        let mut start = 0;
        for &len in lengths {
            for h in 0..heads {
                let at = |row: usize, part: usize, d: usize| {
                    qkv[(start + row) * 3 * hidden + part * hidden + h * hd + d] as f64
                };
                for i in 0..len {
                    let scores: Vec<f64> = (0..len)
                        .map(|j| (0..hd).map(|d| at(i, 0, d) * at(j, 1, d)).sum::<f64>())
                        .map(|s| s / (hd as f64).sqrt())
                        .collect();
                    let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let weights: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
                    let total: f64 = weights.iter().sum();
                    for d in 0..hd {
                        let value: f64 = (0..len).map(|j| weights[j] * at(j, 2, d)).sum();
                        out[(start + i) * hidden + h * hd + d] = (value / total) as f32;
                    }
                }
            }
            start += len;
        }
        out
    }

    /// Whether the AVX-512 kernels run here (a note when they do not).
    #[cfg(target_arch = "x86_64")]
    /// The fused residual add and layer norm gives candle's tensor path
    /// (`a + b`, then `candle_nn::ops::layer_norm`) bit for bit, in every
    /// build, for any number of rows.
    #[test]
    fn add_layer_norm_equals_candles_bit_for_bit() {
        use candle_core::{Device, Tensor};
        let n = 384;
        let value = |i: usize, seed: usize| ((i * 7919 + seed) % 1013) as f32 / 97.0 - 5.1;
        for rows in [1usize, 7, 8, 19] {
            let x: Vec<f32> = (0..rows * n).map(|i| value(i, 3)).collect();
            let residual: Vec<f32> = (0..rows * n).map(|i| value(i, 500) * 0.3).collect();
            let weight: Vec<f32> = (0..n).map(|i| 0.5 + value(i, 11) * 0.05).collect();
            let bias: Vec<f32> = (0..n).map(|i| value(i, 29) * 0.01).collect();
            let t = |v: &[f32], shape: (usize, usize)| {
                Tensor::from_slice(v, shape, &Device::Cpu).unwrap()
            };
            let sum = (t(&x, (rows, n)) + t(&residual, (rows, n))).unwrap();
            let want = candle_nn::ops::layer_norm(
                &sum,
                &t(&weight, (1, n)).flatten_all().unwrap(),
                &t(&bias, (1, n)).flatten_all().unwrap(),
                1e-12,
            )
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
            for build in 0..3u8 {
                let mut got = x.clone();
                match build {
                    0 => {
                        generic::add_layer_norm::<false>(&mut got, &residual, &weight, &bias, 1e-12)
                    }
                    1 => {
                        generic::add_layer_norm::<true>(&mut got, &residual, &weight, &bias, 1e-12)
                    }
                    _ => add_layer_norm(&mut got, &residual, &weight, &bias, 1e-12),
                }
                let same = got
                    .iter()
                    .zip(&want)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{rows} rows, build {build}");
            }
        }
    }

    fn avx512() -> bool {
        let here = super::level() >= 2;
        if !here {
            eprintln!("skipping: no AVX-512 here");
        }
        here
    }

    /// A vector's bit patterns, for comparisons that must be exact.
    #[cfg(target_arch = "x86_64")]
    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    /// The two-query context loop gives each query exactly what the
    /// one-query loop gives it, bit for bit.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_two_query_context_is_bit_identical_to_one_query() {
        if !avx512() {
            return;
        }
        for (n, head_dim) in [
            (1usize, 32usize),
            (2, 32),
            (7, 32),
            (128, 32),
            (33, 40),
            (5, 64),
            (9, 3),
        ] {
            let dim_p = head_dim.div_ceil(16) * 16;
            let values: Vec<f32> = (0..n * dim_p)
                .map(|i| ((i * 7919 % 1013) as f32 / 211.0) - 2.4)
                .collect();
            let probs = |seed: usize| -> Vec<f32> {
                (0..n)
                    .map(|j| ((j * 104729 + seed) % 997) as f32 / 997.0)
                    .collect()
            };
            let (pa, pb) = (probs(1), probs(500));
            let (mut one_a, mut one_b) = (vec![0f32; head_dim], vec![0f32; head_dim]);
            let (mut two_a, mut two_b) = (vec![1f32; head_dim], vec![1f32; head_dim]);
            // SAFETY: `level` found AVX-512 F, AVX2 and FMA; the shapes
            // are as the kernels require.
            unsafe {
                super::avx2::context(&pa, &values, dim_p, &mut one_a);
                super::avx2::context(&pb, &values, dim_p, &mut one_b);
                super::avx512::context2(&pa, &pb, &values, dim_p, &mut two_a, &mut two_b);
            }
            assert_eq!(bits(&one_a), bits(&two_a), "n {n}, head_dim {head_dim}");
            assert_eq!(bits(&one_b), bits(&two_b), "n {n}, head_dim {head_dim}");
        }
    }

    /// The four-query score loop gives each query exactly what the
    /// one-query loop gives it, bit for bit, at every padded length.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_four_query_scores_are_bit_identical_to_one_query() {
        if !avx512() {
            return;
        }
        for (len_p, dim) in [
            (16usize, 32usize),
            (64, 32),
            (80, 32),
            (128, 32),
            (144, 3),
            (48, 64),
        ] {
            let keys_t: Vec<f32> = (0..dim * len_p)
                .map(|i| ((i * 7919 % 1013) as f32 / 211.0) - 2.4)
                .collect();
            let query = |seed: usize| -> Vec<f32> {
                (0..dim)
                    .map(|d| ((d * 104729 + seed) % 997) as f32 / 331.0 - 1.5)
                    .collect()
            };
            let queries = [query(1), query(500), query(77), query(913)];
            let scale = 0.176_776_7;
            let mut one = vec![vec![0f32; len_p]; 4];
            let mut four = vec![vec![1f32; len_p]; 4];
            // SAFETY: `level` found AVX-512 F; the shapes are as the
            // kernels require.
            unsafe {
                for (q, row) in queries.iter().zip(one.iter_mut()) {
                    super::avx512::scores(q, &keys_t, len_p, scale, row);
                }
                let [a, b, c, d] = &mut four[..] else {
                    unreachable!()
                };
                super::avx512::scores4(
                    [&queries[0], &queries[1], &queries[2], &queries[3]],
                    &keys_t,
                    len_p,
                    scale,
                    [a, b, c, d],
                );
            }
            for (o, f) in one.iter().zip(&four) {
                assert_eq!(bits(o), bits(f), "len_p {len_p}, dim {dim}");
            }
        }
    }

    /// The register transpose of the keys puts every value where the
    /// plain loop puts it, and leaves the padding zero.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_blocked_key_transpose_equals_the_plain_one() {
        if !avx512() {
            return;
        }
        for (len, hidden) in [
            (1usize, 16usize),
            (15, 32),
            (16, 384),
            (17, 384),
            (128, 384),
            (33, 48),
        ] {
            let stride = 3 * hidden;
            let len_p = len.div_ceil(16) * 16;
            let qkv: Vec<f32> = (0..len * stride).map(|i| i as f32 * 0.5 - 7.0).collect();
            let mut plain = vec![0f32; hidden * len_p];
            super::generic::transpose_keys(&qkv, hidden, stride, len_p, &mut plain);
            let mut blocked = vec![0f32; hidden * len_p];
            // SAFETY: `level` found AVX-512 F; the shapes are as required.
            unsafe {
                super::avx512::transpose_keys(&qkv, len, hidden, stride, len_p, &mut blocked)
            };
            assert_eq!(plain, blocked, "len {len}, hidden {hidden}");
        }
    }

    #[test]
    fn attention_matches_the_definition_per_text() {
        // Odd shapes, then MiniLM's (12 heads of 32) at lengths that end
        // on and off the kernels' blocks.
        for (heads, hd, lengths) in [(3, 5, vec![1, 7, 2, 13]), (12, 32, vec![128, 33, 9])] {
            attention_case(heads, hd, &lengths);
        }
    }

    fn attention_case(heads: usize, hd: usize, lengths: &[usize]) {
        let rows: usize = lengths.iter().sum();
        let qkv: Vec<f32> = (0..rows * 3 * heads * hd)
            .map(|i| ((i * 7919 % 1000) as f32 / 250.0) - 2.0)
            .collect();
        let mut out = vec![f32::NAN; rows * heads * hd];
        attention(&qkv, lengths, heads, hd, &mut out);
        let want = reference(&qkv, lengths, heads, hd);
        for (i, (g, w)) in out.iter().zip(&want).enumerate() {
            assert!((g - w).abs() < 1e-5, "element {i}: {g} vs {w}");
        }
    }
}
