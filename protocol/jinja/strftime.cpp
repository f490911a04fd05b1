// strftime for strftime_now: the C locale's names and formats, with glibc's "-" flag
// (no padding) as Python on Linux has it. Unknown directives are refused by name.
#include <array>
#include <cstdio>
#include <string>

#include "protocol/jinja/error.h"
#include "protocol/jinja/interpreter.h"

namespace tandem::jinja {
namespace {

constexpr std::array<const char*, 7> kDays = {"Sunday",   "Monday", "Tuesday", "Wednesday",
                                              "Thursday", "Friday", "Saturday"};
constexpr std::array<const char*, 12> kMonths = {"January",   "February", "March",    "April",
                                                 "May",       "June",     "July",     "August",
                                                 "September", "October",  "November", "December"};

bool leap(int year) { return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0; }

int day_of_year(const DateTime& t) {
  static constexpr std::array<int, 12> kBefore = {0,   31,  59,  90,  120, 151,
                                                  181, 212, 243, 273, 304, 334};
  return kBefore[static_cast<size_t>(t.month - 1)] + t.day + (t.month > 2 && leap(t.year) ? 1 : 0);
}

// 0 = Sunday (days_from_civil, H. Hinnant).
int weekday(const DateTime& t) {
  const int y = t.year - (t.month <= 2 ? 1 : 0);
  const int era = (y >= 0 ? y : y - 399) / 400;
  const int yoe = y - era * 400;
  const int mp = (t.month + 9) % 12;
  const int doy = (153 * mp + 2) / 5 + t.day - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const long days = static_cast<long>(era) * 146097 + doe - 719468;
  return static_cast<int>(((days % 7) + 11) % 7);
}

std::string number(int value, int width, char pad) {
  std::string digits = std::to_string(value);
  if (pad != '\0' && static_cast<int>(digits.size()) < width) {
    digits.insert(0, static_cast<size_t>(width) - digits.size(), pad);
  }
  return digits;
}

std::string directive(const DateTime& t, char d, bool no_pad) {
  const char zero = no_pad ? '\0' : '0';
  const int hour12 = t.hour % 12 == 0 ? 12 : t.hour % 12;
  const std::string day = kDays[static_cast<size_t>(weekday(t))];
  const std::string month = kMonths[static_cast<size_t>(t.month - 1)];
  switch (d) {
    case 'a':
      return day.substr(0, 3);
    case 'A':
      return day;
    case 'b':
    case 'h':
      return month.substr(0, 3);
    case 'B':
      return month;
    case 'd':
      return number(t.day, 2, zero);
    case 'e':
      return number(t.day, 2, no_pad ? '\0' : ' ');
    case 'H':
      return number(t.hour, 2, zero);
    case 'I':
      return number(hour12, 2, zero);
    case 'j':
      return number(day_of_year(t), 3, zero);
    case 'm':
      return number(t.month, 2, zero);
    case 'M':
      return number(t.minute, 2, zero);
    case 'S':
      return number(t.second, 2, zero);
    case 'p':
      return t.hour < 12 ? "AM" : "PM";
    case 'y':
      return number(t.year % 100, 2, zero);
    case 'Y':
      return std::to_string(t.year);
    case 'C':
      return number(t.year / 100, 2, zero);
    case 'u':
      return std::to_string(weekday(t) == 0 ? 7 : weekday(t));
    case 'w':
      return std::to_string(weekday(t));
    case 'Z':
    case 'z':
      return "";
    case 'n':
      return "\n";
    case 't':
      return "\t";
    case '%':
      return "%";
    default:
      unsupported(std::string("the strftime directive %") + d);
  }
}

}  // namespace

std::string strftime(const DateTime& time, const std::string& format) {
  static const std::array<std::pair<char, const char*>, 7> kComposite = {{
      {'c', "%a %b %e %H:%M:%S %Y"},
      {'x', "%m/%d/%y"},
      {'X', "%H:%M:%S"},
      {'D', "%m/%d/%y"},
      {'F', "%Y-%m-%d"},
      {'T', "%H:%M:%S"},
      {'R', "%H:%M"},
  }};
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%' || i + 1 >= format.size()) {
      out += format[i];
      continue;
    }
    const bool no_pad = format[i + 1] == '-' && i + 2 < format.size();
    const char d = format[i + (no_pad ? 2 : 1)];
    i += no_pad ? 2 : 1;
    bool composite = false;
    for (const auto& [name, expansion] : kComposite) {
      if (name == d) {
        out += strftime(time, expansion);
        composite = true;
      }
    }
    if (!composite) out += directive(time, d, no_pad);
  }
  return out;
}

}  // namespace tandem::jinja
