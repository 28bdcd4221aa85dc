/*
 * tests/progs/sym_cxx.cc - C++ for the symbolizer tests: templates,
 * overloads, a namespace, a class with inlined member functions, and a
 * lambda, compiled -O2 -g. Names must come out demangled with -C.
 */
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace geo {

struct Point {
	int x, y;
	int norm1() const { return (x < 0 ? -x : x) + (y < 0 ? -y : y); }
};

template <typename T>
__attribute__((noinline)) T accumulate(const std::vector<T> &v)
{
	T s{};
	for (const T &e : v)
		s += e;
	return s;
}

__attribute__((noinline)) int scale(int v) { return v * 2; }
__attribute__((noinline)) double scale(double v) { return v * 2.5; }

template <int N>
__attribute__((noinline)) int unrolled(int v)
{
	int s = 0;
	for (int i = 0; i < N; i++)
		s += Point{v + i, -i}.norm1();
	return s;
}

} // namespace geo

int main(int argc, char **argv)
{
	int n = argc > 1 ? std::atoi(argv[1]) : 8;
	std::vector<int> vi;
	std::vector<double> vd;
	for (int i = 0; i < n; i++) {
		vi.push_back(geo::scale(i));
		vd.push_back(geo::scale(i * 1.0));
	}
	auto twice = [n](int v) { return v * n + geo::unrolled<3>(v); };
	std::printf("%d %g %d %d\n", geo::accumulate(vi), geo::accumulate(vd), twice(n),
		    geo::unrolled<5>(n));
	return 0;
}
