#pragma once
// Numeric CSV files with a header row, read into a [rows, columns] tensor.
//
// The first non-empty line names the columns; fields may be quoted ("a, b" and "" for a quote
// inside). Lines end in \n or \r\n; empty lines and a missing final newline are fine; a UTF-8
// byte-order mark is skipped. Only the chosen columns are parsed, so others may hold text.
// A cell is a decimal or scientific number, optionally quoted and surrounded by spaces, with an
// optional sign; "nan", "inf" and "infinity" (any case) are accepted. A value below the dtype's
// range reads as 0 or a denormal, as NumPy reads it. Anything else (text, an empty cell, a value
// above the dtype's range) or a row with the wrong number of fields is a strider::Error naming the
// file, the line, and the column's name and number.
#include <string>
#include <vector>

#include "strider/core/tensor.h"

namespace strider::io {

struct CsvOptions {
  std::vector<std::string> columns;  // by header name, in this order; empty: every column
  ScalarType dtype = kFloat;         // kFloat or kDouble
  char delimiter = ',';
};

// A column name that is not in the header (or is there twice) is an Error listing the header.
Tensor read_csv(const std::string& path, const CsvOptions& options = {});

// The header row's column names.
std::vector<std::string> read_csv_header(const std::string& path, char delimiter = ',');

}  // namespace strider::io
