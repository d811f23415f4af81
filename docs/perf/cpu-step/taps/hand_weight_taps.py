"""Tap-unrolled grouped bwd-weight for g8c4k4 3x3 s1 p1 NCHW. WA: one reduction over (n,h,w), 9 outputs.
WB: per-image partials (h,w reduced), 9 outputs inserted into [n,g,k,c,3,3], then sum over n."""
import sys
N,G,C,K,H,W,F=16,8,4,4,16,16,3
variant=sys.argv[1]
L=[];a=L.append
a(f"""func.func @f(%x: tensor<{N}x{G*C}x{H}x{W}xf32>, %grad_out: tensor<{N}x{G*K}x{H}x{W}xf32>, %dst: tensor<{G*K}x{C}x{F}x{F}xf32> {{iree.abi.output = 0 : index}}, %transients: !hal.buffer {{iree.abi.transients}}) -> tensor<{G*K}x{C}x{F}x{F}xf32> {{
  %zero = arith.constant 0.0 : f32
  %xg = tensor.expand_shape %x [[0], [1, 2], [3], [4]] output_shape [{N}, {G}, {C}, {H}, {W}] : tensor<{N}x{G*C}x{H}x{W}xf32> into tensor<{N}x{G}x{C}x{H}x{W}xf32>
  %xp = tensor.pad %xg low[0, 0, 0, 1, 1] high[0, 0, 0, 1, 1] {{
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index, %i4: index):
    tensor.yield %zero : f32
  }} : tensor<{N}x{G}x{C}x{H}x{W}xf32> to tensor<{N}x{G}x{C}x{H+2}x{W+2}xf32>
  %go = tensor.expand_shape %grad_out [[0], [1, 2], [3], [4]] output_shape [{N}, {G}, {K}, {H}, {W}] : tensor<{N}x{G*K}x{H}x{W}xf32> into tensor<{N}x{G}x{K}x{H}x{W}xf32>
  %dstg = tensor.expand_shape %dst [[0, 1], [2], [3], [4]] output_shape [{G}, {K}, {C}, {F}, {F}] : tensor<{G*K}x{C}x{F}x{F}xf32> into tensor<{G}x{K}x{C}x{F}x{F}xf32>""")
taps=[(u0,u1) for u0 in range(F) for u1 in range(F)]
T=len(taps)
for t,(u0,u1) in enumerate(taps):
    a(f"  %x{t} = tensor.extract_slice %xp[0, 0, 0, {u0}, {u1}] [{N}, {G}, {C}, {H}, {W}] [1, 1, 1, 1, 1] : tensor<{N}x{G}x{C}x{H+2}x{W+2}xf32> to tensor<{N}x{G}x{C}x{H}x{W}xf32>")
if variant=="C":
    it='"parallel", "parallel", "parallel", "parallel", "reduction", "reduction"'
    dims="(g, k, c, w, n, h)"; ot=f"tensor<{G}x{K}x{C}x{W}xf32>"; omap=f"affine_map<{dims} -> (g, k, c, w)>"
elif variant=="A":
    it='"parallel", "parallel", "parallel", "reduction", "reduction", "reduction"'
    dims="(g, k, c, n, h, w)"; ot=f"tensor<{G}x{K}x{C}xf32>"; omap=f"affine_map<{dims} -> (g, k, c)>"
else:
    it='"parallel", "parallel", "parallel", "parallel", "reduction", "reduction"'
    dims="(n, g, k, c, h, w)"; ot=f"tensor<{N}x{G}x{K}x{C}xf32>"; omap=f"affine_map<{dims} -> (n, g, k, c)>"
a(f"  %oe = tensor.empty() : {ot}")
a(f"  %oz = linalg.fill ins(%zero : f32) outs(%oe : {ot}) -> {ot}")
ins=["%go"]+[f"%x{t}" for t in range(T)]
types=[f"tensor<{N}x{G}x{K}x{H}x{W}xf32>"]+[f"tensor<{N}x{G}x{C}x{H}x{W}xf32>"]*T
maps=[f"affine_map<{dims} -> (n, g, k, h, w)>"]+[f"affine_map<{dims} -> (n, g, c, h, w)>"]*T+[omap]*T
res=f"%r:{T}"
a(f"  {res} = linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = [{it}]}} ins({', '.join(ins)} : {', '.join(types)}) outs({', '.join(['%oz']*T)} : {', '.join([ot]*T)}) {{")
a("  ^bb0(%y: f32, " + ", ".join(f"%a{t}: f32" for t in range(T)) + ", " + ", ".join(f"%o{t}: f32" for t in range(T)) + "):")
for t in range(T):
    a(f"    %m{t} = arith.mulf %y, %a{t} : f32"); a(f"    %s{t} = arith.addf %o{t}, %m{t} : f32")
a("    linalg.yield " + ", ".join(f"%s{t}" for t in range(T)) + " : " + ", ".join(["f32"]*T))
a(f"  }} -> (" + ", ".join([ot]*T) + ")")
def stack_then_sum(dims, reduced):
    """The per-tap results (dims without f0, f1) inserted at their taps into one tensor of ``dims``, then summed over
    ``reduced`` into grad_w's (g, k, c, f0, f1): variants B and C."""
    size = {"n": N, "g": G, "k": K, "c": C, "f0": F, "f1": F, "w": W}
    shape = "x".join(str(size[d]) for d in dims)
    a(f"  %pe = tensor.empty() : tensor<{shape}xf32>")
    cur="%pe"
    for t,(u0,u1) in enumerate(taps):
        offsets = ", ".join({"f0": str(u0), "f1": str(u1)}.get(d, "0") for d in dims)
        sizes = ", ".join("1" if d in ("f0", "f1") else str(size[d]) for d in dims)
        a(f"  %i{t} = tensor.insert_slice %r#{t} into {cur}[{offsets}] [{sizes}] [{', '.join(['1'] * len(dims))}] : {ot} into tensor<{shape}xf32>"); cur=f"%i{t}"
    a(f"  %dz = linalg.fill ins(%zero : f32) outs(%dstg : tensor<{G}x{K}x{C}x{F}x{F}xf32>) -> tensor<{G}x{K}x{C}x{F}x{F}xf32>")
    domain = ", ".join(["g", "k", "c", "f0", "f1", reduced])
    a(f"""  %fin = linalg.generic {{indexing_maps = [affine_map<({domain}) -> ({', '.join(dims)})>, affine_map<({domain}) -> (g, k, c, f0, f1)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]}} ins({cur} : tensor<{shape}xf32>) outs(%dz : tensor<{G}x{K}x{C}x{F}x{F}xf32>) {{
  ^bb0(%p: f32, %q: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  }} -> tensor<{G}x{K}x{C}x{F}x{F}xf32>""")
    return "%fin"


if variant=="A":
    cur="%dstg"
    for t,(u0,u1) in enumerate(taps):
        a(f"  %i{t} = tensor.insert_slice %r#{t} into {cur}[0, 0, 0, {u0}, {u1}] [{G}, {K}, {C}, 1, 1] [1, 1, 1, 1, 1] : {ot} into tensor<{G}x{K}x{C}x{F}x{F}xf32>"); cur=f"%i{t}"
    fin=cur
elif variant=="C":
    fin=stack_then_sum(["g", "k", "c", "f0", "f1", "w"], "w")
elif variant=="D":
    a(f"  %dz = linalg.fill ins(%zero : f32) outs(%dstg : tensor<{G}x{K}x{C}x{F}x{F}xf32>) -> tensor<{G}x{K}x{C}x{F}x{F}xf32>")
    m="affine_map<(g, k, c, f0, f1, n) -> (n, g, k, c)>"
    a(f"  %fin = linalg.generic {{indexing_maps = [{', '.join([m]*T)}, affine_map<(g, k, c, f0, f1, n) -> (g, k, c, f0, f1)>], iterator_types = [\"parallel\", \"parallel\", \"parallel\", \"parallel\", \"parallel\", \"reduction\"]}} ins({', '.join(f'%r#{t}' for t in range(T))} : {', '.join([ot]*T)}) outs(%dz : tensor<{G}x{K}x{C}x{F}x{F}xf32>) {{")
    a("  ^bb0(" + ", ".join(f"%p{t}: f32" for t in range(T)) + ", %q: f32):")
    a("    %f0 = linalg.index 3 : index"); a("    %f1 = linalg.index 4 : index")
    a(f"    %tap = affine.apply affine_map<(a, b) -> (a * {F} + b)>(%f0, %f1)")
    prev="%p0"
    for t in range(1,T):
        a(f"    %c{t} = arith.constant {t} : index"); a(f"    %e{t} = arith.cmpi eq, %tap, %c{t} : index"); a(f"    %v{t} = arith.select %e{t}, %p{t}, {prev} : f32"); prev=f"%v{t}"
    a(f"    %s = arith.addf %q, {prev} : f32"); a("    linalg.yield %s : f32")
    a(f"  }} -> tensor<{G}x{K}x{C}x{F}x{F}xf32>")
    fin="%fin"
else:
    fin=stack_then_sum(["n", "g", "k", "c", "f0", "f1"], "n")
a(f"  %res = tensor.collapse_shape {fin} [[0, 1], [2], [3], [4]] : tensor<{G}x{K}x{C}x{F}x{F}xf32> into tensor<{G*K}x{C}x{F}x{F}xf32>")
a(f"  return %res : tensor<{G*K}x{C}x{F}x{F}xf32>\n}}")
print("\n".join(L))
