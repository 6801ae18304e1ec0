// A small C++ program for the symbolize differential tests: namespaces,
// templates, methods, a lambda, std::string and std::vector, so that
// demangled names with parameters and template arguments are compared.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace shapes {

class Shape {
public:
	virtual ~Shape() = default;
	virtual double area() const = 0;
	std::string name;
};

class Rect : public Shape {
public:
	Rect(double w, double h) : w_(w), h_(h) { name = "rect"; }
	double area() const override { return w_ * h_; }
private:
	double w_, h_;
};

template <typename T>
T accumulate_areas(const std::vector<T> &v)
{
	T s{};
	for (const auto &x : v)
		s += x;
	return s;
}

} // namespace shapes

namespace {
int count_words(const std::string &s)
{
	int n = 0;
	bool in = false;
	for (char c : s) {
		if (c == ' ') {
			in = false;
		} else if (!in) {
			in = true;
			n++;
		}
	}
	return n;
}
__attribute__((cold, noinline)) void fail(const char *why, int n)
{
	std::fprintf(stderr, "%s %d\n", why, n);
	std::exit(3);
}

// GCC clones this for the constant k (work(int, int) [clone .constprop.0])
// and moves the unlikely branch to a cold part,
// _ZN12_GLOBAL__N_14workEii.constprop.0.cold, whose DWARF has only the
// source name "work": the case TestColdParts names after its symbol.
__attribute__((noinline)) int work(int n, int k)
{
	if (n < 0)
		fail("negative", n);
	int s = 0;
	for (int i = 0; i < n; i++)
		s += i * k;
	return s;
}
} // namespace

int main(int argc, char **argv)
{
	std::vector<shapes::Rect> rs;
	for (int i = 0; i < argc + 5; i++)
		rs.emplace_back(i, i + 1);
	std::vector<double> areas;
	for (const auto &r : rs)
		areas.push_back(r.area());
	std::sort(areas.begin(), areas.end(), [](double a, double b) { return a > b; });
	std::map<std::string, int> words;
	words[argv[0]] = count_words(argv[0]);
	std::printf("%f %zu %d\n", shapes::accumulate_areas(areas), words.size(), work(argc * 1000, 3) + work(argc, 3));
	return 0;
}
