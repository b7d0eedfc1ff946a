// A slot type that shares its name with one in context_test.cpp, each in its own file's
// anonymous namespace: they must get different slots.
#include <strider/strider.h>

namespace strider {
namespace {
struct TwinSlot {
  int value = 2;
};
}  // namespace

int twin_slot_value_in_other_file() { return Context::process().slot<TwinSlot>().value; }

}  // namespace strider
