// A std::regex program for the symbolize differential test of lambdas
// (TestDiffLambda): GCC writes a lambda's operator(), and every member
// function of a class local to a function, inside that class's DIE within
// the function's. libstdc++'s own regex code has such a lambda
// (_BracketMatcher::_M_apply's, whose range-for inlines
// __normal_iterator and vector::end()); the ones below add lambdas kept
// out of line in a function, in a function template, in another lambda,
// and a local class's member function, each with inlined calls inside.
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <regex>
#include <string>
#include <vector>

namespace {

template <typename T>
T sum_over(const std::vector<T> &v)
{
	auto add = [&v](T init) __attribute__((noinline)) {
		T s = init;
		for (auto it = v.begin(); it != v.end(); ++it)
			s += *it;
		return s;
	};
	return add(T{});
}

int count_matches(const std::vector<std::string> &lines, const std::regex &re)
{
	auto matches = [&re](const std::string &s) __attribute__((noinline)) {
		std::smatch m;
		return std::regex_search(s, m, re) && m[1].length() > 1;
	};
	auto outer = [&](int bias) __attribute__((noinline)) {
		auto inner = [&](const std::string &s) __attribute__((noinline)) {
			return static_cast<int>(std::count(s.begin(), s.end(), 'a')) + bias;
		};
		int n = 0;
		for (const auto &s : lines)
			n += matches(s) ? inner(s) : 0;
		return n;
	};
	return outer(1);
}

std::vector<int> lengths(const std::vector<std::string> &lines)
{
	struct Measure {
		__attribute__((noinline)) static std::vector<int> of(const std::vector<std::string> &v)
		{
			std::vector<int> out;
			out.reserve(v.size());
			for (const auto &s : v)
				out.push_back(static_cast<int>(s.size()));
			std::sort(out.begin(), out.end());
			return out;
		}
	};
	return Measure::of(lines);
}

} // namespace

int main(int argc, char **argv)
{
	std::vector<std::string> lines(argv + 1, argv + argc);
	if (lines.empty())
		lines = {"alpha 12", "Beta 7", "gamma x", "delta 42"};
	std::regex re("([a-z]+) ([0-9]+)", std::regex::icase);
	std::vector<int> lens = lengths(lines);
	std::printf("%d %d %.1f\n", count_matches(lines, re), sum_over(lens),
		sum_over(std::vector<double>(lens.begin(), lens.end())));
	return 0;
}
