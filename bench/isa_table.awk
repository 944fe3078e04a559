# One line per function of an llc assembly file: name instructions sgprs vgprs scratch calls waves
# (bench/isa_budget.sh, bench/isa_kernel.sh). Calls: s_swappc_b64. LLVM 22 names the SGPR count
# "TotalNumSgprs" where LLVM 19 says "NumSgprs". Waves: llc's "; Occupancy:" of a kernel, the waves
# per SIMD its registers and LDS allow (GCNSubtarget::computeOccupancy); "-" for a callable
# function, which has none. Its comment follows ScratchSize, so the lines are printed at the end.
  /^[A-Za-z_][A-Za-z0-9_.$]*:/ && !/^\.L/ { name = substr($1, 1, length($1) - 1); n = 0; calls = 0; inside = 1; next }
  inside && /^\.Lfunc_end/ { inside = 0; count[name] = n; ncalls[name] = calls; next }
  inside && /^[[:space:]]+[a-z_][a-z0-9_]*([[:space:]]|$)/ && !/^[[:space:]]+\./ { ++n; if ($1 == "s_swappc_b64") ++calls; next }
  /^; (Total)?NumSgprs:/ { sgprs[name] = $3 }
  /^; NumVgprs:/ { vgprs[name] = $3 }
  /^; ScratchSize:/ { order[++functions] = name; scratch[name] = $3 }
  /^; Occupancy:/ { waves[name] = $3 }
  END {
    for (i = 1; i <= functions; ++i) {
      f = order[i]
      print f, count[f], sgprs[f], vgprs[f], scratch[f], ncalls[f], (f in waves ? waves[f] : "-")
    }
  }
