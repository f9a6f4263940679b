# bench_forecast: forecast speed. Included from bench/CMakeLists.txt:
#   include(${CMAKE_CURRENT_SOURCE_DIR}/forecast.cmake)
find_package(Threads REQUIRED)
add_executable(bench_forecast ${CMAKE_CURRENT_LIST_DIR}/forecast_bench.cc)
tidegate_private_headers(bench_forecast)
target_link_libraries(bench_forecast PRIVATE tidegate_forecast benchmark::benchmark Threads::Threads)
target_compile_options(bench_forecast PRIVATE ${TIDEGATE_WARNINGS})
