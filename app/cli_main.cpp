// lowering-cli: the studio's engine, headless.
#include <iostream>

#include "app/Cli.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return lstudio::cli::run(args, std::cout, std::cerr);
}
