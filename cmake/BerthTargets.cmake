# berth_target_defaults(tgt): warnings, torch's ABI flags and the shared torch precompiled header.
function(berth_target_defaults tgt)
  target_compile_options(${tgt} PRIVATE ${BERTH_TORCH_CXX_FLAGS} -Wall -Wextra -Wno-unused-parameter
    # GCC 12 in C++20 mode warns on every "literal" + std::string (GCC bug 105329, a false positive).
    $<$<AND:$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>:-Wno-stringop-overflow -Wno-restrict>)
  # OpenMP as torch is built: ATen's at::parallel_for is inline, and without -fopenmp (_OPENMP) it runs its
  # whole range on the calling thread, so berth's own kernels (AdamW, dropout, softmax, layer norm, GELU) would
  # use one core while torch's use all. One libgomp at run time: torch's (libgomp.so.1 in its lib/, found
  # through the rpath first). GCC only: Clang's -fopenmp wants LLVM's libomp (the fuzzers run serially).
  target_compile_options(${tgt} PRIVATE $<$<CXX_COMPILER_ID:GNU>:-fopenmp>)
  target_link_options(${tgt} PRIVATE $<$<CXX_COMPILER_ID:GNU>:-fopenmp>)
  if(BERTH_USE_PCH AND TARGET berth_pch AND NOT tgt STREQUAL "berth_pch")
    target_precompile_headers(${tgt} REUSE_FROM berth_pch)
  endif()
endfunction()

# berth_without_torch_pch(source...): sources that include no torch header compile without the torch
# precompiled header, whose load costs more than such a file's whole compile (a tokenizer source: 18 s with it,
# 6.5 s without, measured here). Call it in the directory that adds the sources to their target.
function(berth_without_torch_pch)
  set_source_files_properties(${ARGN} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
endfunction()
