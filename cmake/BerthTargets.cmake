# berth_target_defaults(tgt): warnings, torch's ABI flags and the shared torch precompiled header.
function(berth_target_defaults tgt)
  target_compile_options(${tgt} PRIVATE ${BERTH_TORCH_CXX_FLAGS} -Wall -Wextra -Wno-unused-parameter)
  if(BERTH_USE_PCH AND TARGET berth_pch AND NOT tgt STREQUAL "berth_pch")
    target_precompile_headers(${tgt} REUSE_FROM berth_pch)
  endif()
endfunction()
