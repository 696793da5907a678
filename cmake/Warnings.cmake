# Warnings on for our own targets; call attnscope_warnings(target).
function(attnscope_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>
    # GCC 12 at -O3 reports -Wrestrict and -Wstringop-overflow false positives inside
    # libstdc++'s std::string operator+ (GCC bugs 105329, 105651); none comes from our code.
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>:-Wno-restrict -Wno-stringop-overflow>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall>)
endfunction()
