;; The vector index's scan (vector_index.ts embeds it compiled: regenerate with
;; `wat2wasm lib/memory/dots_i8.wat --output=- | base64 -w0`).
;;
;; dots(codes, n, stride, query, out): for each of the n vectors of `stride` bytes at `codes`
;; (int8 components, zero-padded to a multiple of 32 bytes), out[i] = its dot product with the
;; int8 vector at `query`, as an f32. SIMD: 32 bytes per step, widened to i16 products and
;; summed pairwise into two i32x4 accumulators (127 * 127 * 2 fits in i32 for any length here).
(module
  (memory (export "memory") 1)
  (func (export "dots")
    (param $v i32) (param $n i32) (param $stride i32) (param $q i32) (param $out i32)
    (local $end i32) (local $j i32) (local $x v128) (local $y v128) (local $a v128) (local $b v128)
    (local.set $end (i32.add (local.get $v) (i32.mul (local.get $n) (local.get $stride))))
    (block $done
      (loop $rows
        (br_if $done (i32.ge_u (local.get $v) (local.get $end)))
        (local.set $a (v128.const i32x4 0 0 0 0))
        (local.set $b (local.get $a))
        (local.set $j (i32.const 0))
        (loop $cols
          (local.set $x (v128.load offset=0 (i32.add (local.get $v) (local.get $j))))
          (local.set $y (v128.load offset=0 (i32.add (local.get $q) (local.get $j))))
          (local.set $a (i32x4.add (local.get $a) (i32x4.add
            (i32x4.extadd_pairwise_i16x8_s (i16x8.extmul_low_i8x16_s (local.get $x) (local.get $y)))
            (i32x4.extadd_pairwise_i16x8_s (i16x8.extmul_high_i8x16_s (local.get $x) (local.get $y))))))
          (local.set $x (v128.load offset=16 (i32.add (local.get $v) (local.get $j))))
          (local.set $y (v128.load offset=16 (i32.add (local.get $q) (local.get $j))))
          (local.set $b (i32x4.add (local.get $b) (i32x4.add
            (i32x4.extadd_pairwise_i16x8_s (i16x8.extmul_low_i8x16_s (local.get $x) (local.get $y)))
            (i32x4.extadd_pairwise_i16x8_s (i16x8.extmul_high_i8x16_s (local.get $x) (local.get $y))))))
          (br_if $cols (i32.lt_u
            (local.tee $j (i32.add (local.get $j) (i32.const 32)))
            (local.get $stride))))
        (local.set $a (i32x4.add (local.get $a) (local.get $b)))
        (f32.store (local.get $out) (f32.convert_i32_s (i32.add
          (i32.add (i32x4.extract_lane 0 (local.get $a)) (i32x4.extract_lane 1 (local.get $a)))
          (i32.add (i32x4.extract_lane 2 (local.get $a)) (i32x4.extract_lane 3 (local.get $a))))))
        (local.set $out (i32.add (local.get $out) (i32.const 4)))
        (local.set $v (i32.add (local.get $v) (local.get $stride)))
        (br $rows))))
)
