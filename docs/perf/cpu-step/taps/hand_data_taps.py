"""Tap-unrolled grouped bwd-data for g8c4k4 3x3 s1 p1 NCHW, relu mask epilogue: python hand_data_taps.py VARIANT > f.mlir
variant A: iterators (n,g,c,h,w,k) k reduction, 9 shifted inputs.
variant B: iterators (n,g,c,h,w) all parallel, 36 shifted inputs (k unrolled).
variant Z: B for the strided g8c8k8 3x3 s2 p1 layer, grad_out zero-inserted (one stride-1 phase, 72 terms)."""
import sys
variant=sys.argv[1]
N,G,C,K,H,W,F=(16,8,8,8,16,16,3) if variant=="Z" else (16,8,4,4,16,16,3)
S=2 if variant=="Z" else 1;O=H//S
L=[]
a=L.append
a(f"""func.func @f(%grad_out: tensor<{N}x{G*K}x{O}x{O}xf32>, %weight: tensor<{G*K}x{C}x{F}x{F}xf32>, %d0: tensor<{N}x{G*C}x{H}x{W}xf32>, %dst: tensor<{N}x{G*C}x{H}x{W}xf32> {{iree.abi.output = 0 : index}}, %transients: !hal.buffer {{iree.abi.transients}}) -> tensor<{N}x{G*C}x{H}x{W}xf32> {{
  %zero = arith.constant 0.0 : f32
  %go = tensor.expand_shape %grad_out [[0], [1, 2], [3], [4]] output_shape [{N}, {G}, {K}, {O}, {O}] : tensor<{N}x{G*K}x{O}x{O}xf32> into tensor<{N}x{G}x{K}x{O}x{O}xf32>
  %ze = tensor.empty() : tensor<{N}x{G}x{K}x{H+2}x{W+2}xf32>
  %zf = linalg.fill ins(%zero : f32) outs(%ze : tensor<{N}x{G}x{K}x{H+2}x{W+2}xf32>) -> tensor<{N}x{G}x{K}x{H+2}x{W+2}xf32>
  %gop = tensor.insert_slice %go into %zf[0, 0, 0, 1, 1] [{N}, {G}, {K}, {O}, {O}] [1, 1, 1, {S}, {S}] : tensor<{N}x{G}x{K}x{O}x{O}xf32> into tensor<{N}x{G}x{K}x{H+2}x{W+2}xf32>
  %wg = tensor.expand_shape %weight [[0, 1], [2], [3], [4]] output_shape [{G}, {K}, {C}, {F}, {F}] : tensor<{G*K}x{C}x{F}x{F}xf32> into tensor<{G}x{K}x{C}x{F}x{F}xf32>
  %d0s = tensor.expand_shape %d0 [[0], [1, 2], [3], [4]] output_shape [{N}, {G}, {C}, {H}, {W}] : tensor<{N}x{G*C}x{H}x{W}xf32> into tensor<{N}x{G}x{C}x{H}x{W}xf32>
  %dsts = tensor.expand_shape %dst [[0], [1, 2], [3], [4]] output_shape [{N}, {G}, {C}, {H}, {W}] : tensor<{N}x{G*C}x{H}x{W}xf32> into tensor<{N}x{G}x{C}x{H}x{W}xf32>""")
taps=[(u0,u1) for u0 in range(F) for u1 in range(F)]
ins=[];types=[];maps=[]
if variant=="A":
    it='"parallel", "parallel", "parallel", "parallel", "parallel", "reduction"'
    for t,(u0,u1) in enumerate(taps):
        a(f"  %x{t} = tensor.extract_slice %gop[0, 0, 0, {u0}, {u1}] [{N}, {G}, {K}, {H}, {W}] [1, 1, 1, 1, 1] : tensor<{N}x{G}x{K}x{H+2}x{W+2}xf32> to tensor<{N}x{G}x{K}x{H}x{W}xf32>")
        ins.append(f"%x{t}"); types.append(f"tensor<{N}x{G}x{K}x{H}x{W}xf32>"); maps.append("affine_map<(n, g, c, h, w, k) -> (n, g, k, h, w)>")
    # weights: flipped tap f = 2-u
    for t,(u0,u1) in enumerate(taps):
        a(f"  %w{t}s = tensor.extract_slice %wg[0, 0, 0, {F-1-u0}, {F-1-u1}] [{G}, {K}, {C}, 1, 1] [1, 1, 1, 1, 1] : tensor<{G}x{K}x{C}x{F}x{F}xf32> to tensor<{G}x{K}x{C}xf32>")
        ins.append(f"%w{t}s"); types.append(f"tensor<{G}x{K}x{C}xf32>"); maps.append("affine_map<(n, g, c, h, w, k) -> (g, k, c)>")
    a(f"  %acc_empty = tensor.empty() : tensor<{N}x{G}x{C}x{H}x{W}xf32>")
    a(f"  %acc0 = linalg.fill ins(%zero : f32) outs(%acc_empty : tensor<{N}x{G}x{C}x{H}x{W}xf32>) -> tensor<{N}x{G}x{C}x{H}x{W}xf32>")
    maps.append("affine_map<(n, g, c, h, w, k) -> (n, g, c, h, w)>")
    T=len(taps)
    args=", ".join([f"%a{i}: f32" for i in range(T)]+[f"%b{i}: f32" for i in range(T)]+["%acc: f32"])
    a(f"  %acc = linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = [{it}]}} ins({', '.join(ins)} : {', '.join(types)}) outs(%acc0 : tensor<{N}x{G}x{C}x{H}x{W}xf32>) {{")
    a(f"  ^bb0({args}):")
    prev="%acc"
    for i in range(T):
        a(f"    %m{i} = arith.mulf %a{i}, %b{i} : f32"); a(f"    %s{i} = arith.addf {prev}, %m{i} : f32"); prev=f"%s{i}"
    a(f"    linalg.yield {prev} : f32")
    a(f"  }} -> tensor<{N}x{G}x{C}x{H}x{W}xf32>")
    a(f"""  %out = linalg.generic {{indexing_maps = [affine_map<(n, g, c, h, w) -> (n, g, c, h, w)>, affine_map<(n, g, c, h, w) -> (n, g, c, h, w)>, affine_map<(n, g, c, h, w) -> (n, g, c, h, w)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]}} ins(%acc, %d0s : tensor<{N}x{G}x{C}x{H}x{W}xf32>, tensor<{N}x{G}x{C}x{H}x{W}xf32>) outs(%dsts : tensor<{N}x{G}x{C}x{H}x{W}xf32>) {{
  ^bb0(%v: f32, %d: f32, %u: f32):
    %le = arith.cmpf ole, %d, %zero : f32
    %r = arith.select %le, %zero, %v : f32
    linalg.yield %r : f32
  }} -> tensor<{N}x{G}x{C}x{H}x{W}xf32>""")
else:  # B, Z
    it=", ".join(['"parallel"']*5)
    terms=[(k,u0,u1) for k in range(K) for (u0,u1) in taps]
    for t,(k,u0,u1) in enumerate(terms):
        a(f"  %x{t} = tensor.extract_slice %gop[0, 0, {k}, {u0}, {u1}] [{N}, {G}, 1, {H}, {W}] [1, 1, 1, 1, 1] : tensor<{N}x{G}x{K}x{H+2}x{W+2}xf32> to tensor<{N}x{G}x{H}x{W}xf32>")
        ins.append(f"%x{t}"); types.append(f"tensor<{N}x{G}x{H}x{W}xf32>"); maps.append("affine_map<(n, g, c, h, w) -> (n, g, h, w)>")
    for t,(k,u0,u1) in enumerate(terms):
        a(f"  %w{t}s = tensor.extract_slice %wg[0, {k}, 0, {F-1-u0}, {F-1-u1}] [{G}, 1, {C}, 1, 1] [1, 1, 1, 1, 1] : tensor<{G}x{K}x{C}x{F}x{F}xf32> to tensor<{G}x{C}xf32>")
        ins.append(f"%w{t}s"); types.append(f"tensor<{G}x{C}xf32>"); maps.append("affine_map<(n, g, c, h, w) -> (g, c)>")
    ins.append("%d0s"); types.append(f"tensor<{N}x{G}x{C}x{H}x{W}xf32>"); maps.append("affine_map<(n, g, c, h, w) -> (n, g, c, h, w)>")
    maps.append("affine_map<(n, g, c, h, w) -> (n, g, c, h, w)>")
    T=len(terms)
    args=", ".join([f"%a{i}: f32" for i in range(T)]+[f"%b{i}: f32" for i in range(T)]+["%d: f32", "%u: f32"])
    a(f"  %out = linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = [{it}]}} ins({', '.join(ins)} : {', '.join(types)}) outs(%dsts : tensor<{N}x{G}x{C}x{H}x{W}xf32>) {{")
    a(f"  ^bb0({args}):")
    prev=None
    for i in range(T):
        a(f"    %m{i} = arith.mulf %a{i}, %b{i} : f32")
        if prev is None: prev=f"%m{i}"
        else: a(f"    %s{i} = arith.addf {prev}, %m{i} : f32"); prev=f"%s{i}"
    a(f"    %le = arith.cmpf ole, %d, %zero : f32")
    a(f"    %r = arith.select %le, %zero, {prev} : f32")
    a(f"    linalg.yield %r : f32")
    a(f"  }} -> tensor<{N}x{G}x{C}x{H}x{W}xf32>")
a(f"  %res = tensor.collapse_shape %out [[0], [1, 2], [3], [4]] : tensor<{N}x{G}x{C}x{H}x{W}xf32> into tensor<{N}x{G*C}x{H}x{W}xf32>")
a(f"  return %res : tensor<{N}x{G*C}x{H}x{W}xf32>\n}}")
print("\n".join(L))
