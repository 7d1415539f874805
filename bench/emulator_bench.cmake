# Emulator benchmarks (included from bench/CMakeLists.txt when present).
if(TARGET trnmx_emu)
  trnmx_add_benchmark(emulator_bench emulator_bench.cc)
  target_link_libraries(emulator_bench PRIVATE trnmx_emu)
endif()
