# Warnings are errors for every target of ours (CI builds with -Werror).
# -Wno-restrict: g++ 12 reports false positives inside std::string at -O3 (GCC bug 105329).
set(MOE_CXX_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wno-missing-field-initializers -Wno-restrict -Werror)

set(MOE_CUDA_FLAGS -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -lineinfo
    -Xcompiler=-Wall,-Wextra,-Werror --Werror=all-warnings)
# Measuring builds only (scripts/build-measuring): extra CUDA defines, e.g. MOE_FUSED_TIMELINE.
set(MOE_CUDA_MEASURE_DEFINES "" CACHE STRING "extra CUDA preprocessor defines for a measuring build")
foreach(def ${MOE_CUDA_MEASURE_DEFINES})
  list(APPEND MOE_CUDA_FLAGS -D${def})
endforeach()

if(MOE_SANITIZE)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined> $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=address,undefined)
endif()

# moe_target_defaults(target): warnings and the CUDA target flags for one of our targets.
function(moe_target_defaults target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:${MOE_CXX_WARNINGS}>
    $<$<COMPILE_LANGUAGE:CUDA>:${MOE_CUDA_FLAGS}>)
endfunction()
