#include "fedrt/problems/fed_data.h"
#include "fedrt/problems/least_squares.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "fedrt/core/rng.h"

namespace fedrt::problems {

namespace {

// Standard normal by Box-Muller from two uniforms.
double Gaussian(CounterRng& rng) {
  const double u1 = 1.0 - rng.uniform();  // (0, 1]
  const double u2 = rng.uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> cells;
  size_t pos = 0;
  while (true) {
    const size_t comma = line.find(',', pos);
    cells.push_back(Trim(line.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos)));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return cells;
}

// Parses one numeric cell; the message names file, line and column.
Status ParseCell(const std::string& cell, const std::string& file, long line, size_t col, double& out) {
  if (cell.empty()) return Status::Invalid(fmt::format("{}:{}: column {} is empty", file, line, col + 1));
  errno = 0;
  char* end = nullptr;
  out = std::strtod(cell.c_str(), &end);
  if (end != cell.c_str() + cell.size())
    return Status::Invalid(fmt::format("{}:{}: column {}: '{}' is not a number", file, line, col + 1, cell));
  if (!std::isfinite(out) || errno == ERANGE)
    return Status::Invalid(fmt::format("{}:{}: column {}: '{}' is not a finite number", file, line, col + 1, cell));
  return Status::Ok();
}

struct Rows {
  std::vector<std::vector<double>> rows;  // numeric cells per row
  std::vector<long> lines;                // line number of each row
  size_t columns = 0;
  long first_line = 0;
};

// Reads a CSV file of numbers with a constant column count; `header` is the
// first cell that marks an optional header line.
Status ReadNumericCsv(const std::string& file, const char* header, Rows& out) {
  std::ifstream in(file);
  if (!in) return Status(StatusCode::kNotFound, fmt::format("{}: cannot open", file));
  std::string line;
  long lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const std::string t = Trim(line);
    if (t.empty() || t[0] == '#') continue;
    std::vector<std::string> cells = SplitCsv(t);
    if (out.rows.empty() && out.first_line == 0 && cells[0] == header) {
      out.first_line = -1;  // header seen
      continue;
    }
    if (out.columns == 0) {
      out.columns = cells.size();
      out.first_line = lineno;
    } else if (cells.size() != out.columns) {
      return Status::Invalid(fmt::format("{}:{}: expected {} columns (as on line {}), got {}", file, lineno, out.columns,
                             out.first_line, cells.size()));
    }
    std::vector<double> v(cells.size());
    for (size_t c = 0; c < cells.size(); ++c) FEDRT_TRY(ParseCell(cells[c], file, lineno, c, v[c]));
    out.rows.push_back(std::move(v));
    out.lines.push_back(lineno);
  }
  return Status::Ok();
}

Status Label(FedLoss loss, double v, const std::string& file, long line, double& out) {
  if (loss == FedLoss::kLeastSquares) {
    out = v;
    return Status::Ok();
  }
  if (v == 1.0) out = 1.0;
  else if (v == 0.0 || v == -1.0) out = -1.0;
  else return Status::Invalid(fmt::format("{}:{}: logistic label {} must be -1/+1 or 0/1", file, line, v));
  return Status::Ok();
}

}  // namespace

long FedDataset::total_samples() const {
  long n = 0;
  for (const auto& m : x) n += static_cast<long>(m.rows());
  return n;
}

Result<FedDataset> GenerateFedData(FedLoss loss, const FedDataConfig& cfg) {
  if (cfg.agents <= 0) return Status::Invalid(fmt::format("problem.agents must be positive, got {}", cfg.agents));
  if (cfg.dim <= 0) return Status::Invalid(fmt::format("problem.dim must be positive, got {}", cfg.dim));
  if (cfg.samples <= 0) return Status::Invalid(fmt::format("problem.samples must be positive, got {}", cfg.samples));
  if (!(cfg.covariate_shift >= 0) || !(cfg.concept_shift >= 0) || !(cfg.quantity_skew >= 0) || !(cfg.noise >= 0))
    return Status::Invalid("problem.covariate_shift, concept_shift, quantity_skew and noise must be >= 0");
  const int d = cfg.dim;
  FedDataset out;
  out.loss = loss;
  out.dim = d;
  out.source = "synthetic";
  CounterRng g0(cfg.seed, 0, static_cast<uint64_t>(cfg.agents), 0, RngStream::kProblem);
  Eigen::VectorXd theta(d);
  for (int k = 0; k < d; ++k) theta[k] = Gaussian(g0);
  out.theta_true = theta;
  const double sx = cfg.covariate_shift, sy = cfg.concept_shift, sn = cfg.quantity_skew;
  for (int c = 0; c < cfg.agents; ++c) {
    if (cfg.only_agent >= 0 && c != cfg.only_agent) {  // every agent's stream is its own: skipping one changes no other
      out.x.emplace_back(0, d);
      out.y.emplace_back(0);
      continue;
    }
    CounterRng rng(cfg.seed, 0, static_cast<uint64_t>(c), 0, RngStream::kProblem);
    const double gn = Gaussian(rng);
    const long n = std::max<long>(2, std::lround(static_cast<double>(cfg.samples) * std::exp(sn * gn - 0.5 * sn * sn)));
    Eigen::VectorXd mean(d), scale(d), theta_c(d);
    for (int k = 0; k < d; ++k) mean[k] = sx * Gaussian(rng);
    for (int k = 0; k < d; ++k) scale[k] = std::exp(sx * Gaussian(rng));
    for (int k = 0; k < d; ++k) theta_c[k] = theta[k] + sy * Gaussian(rng);
    MatrixRM xc(n, d);
    Eigen::VectorXd yc(n);
    for (long j = 0; j < n; ++j) {
      for (int k = 0; k < d; ++k) xc(j, k) = mean[k] + scale[k] * Gaussian(rng);
      const double z = xc.row(j).dot(theta_c);
      if (loss == FedLoss::kLeastSquares) {
        yc[j] = z + cfg.noise * Gaussian(rng);
      } else {
        const double p = 1.0 / (1.0 + std::exp(-z));
        yc[j] = rng.uniform() < p ? 1.0 : -1.0;
      }
    }
    out.x.push_back(std::move(xc));
    out.y.push_back(std::move(yc));
  }
  return out;
}

Result<FedDataset> LoadFedDataCsv(FedLoss loss, const std::string& path) {
  namespace fs = std::filesystem;
  FedDataset out;
  out.loss = loss;
  out.source = path;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(path, ec))
      if (e.is_regular_file() && e.path().extension() == ".csv") files.push_back(e.path().string());
    if (ec) return Status::Invalid(fmt::format("{}: cannot list directory: {}", path, ec.message()));
    std::sort(files.begin(), files.end());
    if (files.empty()) return Status::Invalid(fmt::format("{}: no *.csv files (one file per agent expected)", path));
    std::string first_file;
    for (const std::string& f : files) {
      Rows rows;
      FEDRT_TRY(ReadNumericCsv(f, "y", rows));
      if (rows.rows.empty()) return Status::Invalid(fmt::format("{}: agent {} has no rows", f, out.agents()));
      if (rows.columns < 2) return Status::Invalid(fmt::format("{}:{}: need a label and at least one feature", f, rows.first_line));
      const int d = static_cast<int>(rows.columns) - 1;
      if (out.dim == 0) {
        out.dim = d;
        first_file = f;
      } else if (d != out.dim) {
        return Status::Invalid(fmt::format("{}:{}: {} features, but {} has {} (dimensions must match)", f, rows.first_line, d,
                               first_file, out.dim));
      }
      MatrixRM xc(rows.rows.size(), d);
      Eigen::VectorXd yc(rows.rows.size());
      for (size_t j = 0; j < rows.rows.size(); ++j) {
        FEDRT_TRY(Label(loss, rows.rows[j][0], f, rows.lines[j], yc[j]));
        for (int k = 0; k < d; ++k) xc(j, k) = rows.rows[j][k + 1];
      }
      out.x.push_back(std::move(xc));
      out.y.push_back(std::move(yc));
    }
    return out;
  }
  if (!fs::exists(path, ec)) return Status(StatusCode::kNotFound, fmt::format("data path '{}' not found", path));
  Rows rows;
  FEDRT_TRY(ReadNumericCsv(path, "agent", rows));
  if (rows.rows.empty()) return Status::Invalid(fmt::format("{}: no data rows", path));
  if (rows.columns < 3)
    return Status::Invalid(fmt::format("{}:{}: need columns agent,y,x_1[,...] (got {})", path, rows.first_line, rows.columns));
  const int d = static_cast<int>(rows.columns) - 2;
  out.dim = d;
  std::map<long, std::vector<size_t>> by_agent;
  for (size_t j = 0; j < rows.rows.size(); ++j) {
    const double a = rows.rows[j][0];
    if (a < 0 || a != std::floor(a) || a > 1e6)
      return Status::Invalid(fmt::format("{}:{}: agent id {} must be an integer in [0, 1e6]", path, rows.lines[j], a));
    by_agent[static_cast<long>(a)].push_back(j);
  }
  const long n_agents = by_agent.rbegin()->first + 1;
  for (long c = 0; c < n_agents; ++c) {
    auto it = by_agent.find(c);
    if (it == by_agent.end())
      return Status::Invalid(fmt::format("{}: agent {} has no rows (agents are numbered 0..{})", path, c, n_agents - 1));
    MatrixRM xc(it->second.size(), d);
    Eigen::VectorXd yc(it->second.size());
    for (size_t i = 0; i < it->second.size(); ++i) {
      const size_t j = it->second[i];
      FEDRT_TRY(Label(loss, rows.rows[j][1], path, rows.lines[j], yc[i]));
      for (int k = 0; k < d; ++k) xc(i, k) = rows.rows[j][k + 2];
    }
    out.x.push_back(std::move(xc));
    out.y.push_back(std::move(yc));
  }
  return out;
}

Result<LsaSystem> LeastSquaresSystem(const FedDataset& data, double l2) {
  LsaSystem s;
  s.dim = data.dim;
  for (int c = 0; c < data.agents(); ++c) {
    const double n = static_cast<double>(data.x[c].rows());
    Eigen::MatrixXd abar = (data.x[c].transpose() * data.x[c]) / n;
    if (l2 != 0.0) abar.diagonal().array() += l2;
    s.abar.push_back(std::move(abar));
    s.bbar.push_back((data.x[c].transpose() * data.y[c]) / n);
  }
  Status st = s.solve();
  if (!st.ok())
    return Status(StatusCode::kFailedPrecondition,
                  fmt::format("least squares: sum_c X_c^T X_c / n_c + l2 I is singular ({}; model.l2 > 0 makes it ridge regression)", st.message()));
  return s;
}

void LogisticLocal(const FedDataset& data, int c, double l2, const Eigen::VectorXd& x, double* value,
                   Eigen::VectorXd* grad, Eigen::MatrixXd* hess) {
  const auto& X = data.x[c];
  const auto& y = data.y[c];
  const double inv_n = 1.0 / static_cast<double>(X.rows());
  const Eigen::VectorXd z = X * x;
  if (value) {
    double v = 0;
    for (long j = 0; j < z.size(); ++j) {
      const double m = -y[j] * z[j];  // log(1 + e^m), stable
      v += m > 0 ? m + std::log1p(std::exp(-m)) : std::log1p(std::exp(m));
    }
    *value = v * inv_n + 0.5 * l2 * x.squaredNorm();
  }
  if (grad) {
    Eigen::VectorXd w(z.size());
    for (long j = 0; j < z.size(); ++j) {
      const double m = -y[j] * z[j];
      const double s = m >= 0 ? 1.0 / (1.0 + std::exp(-m)) : std::exp(m) / (1.0 + std::exp(m));
      w[j] = -y[j] * s * inv_n;
    }
    *grad = X.transpose() * w + l2 * x;
  }
  if (hess) {
    Eigen::VectorXd w(z.size());
    for (long j = 0; j < z.size(); ++j) {
      const double p = z[j] >= 0 ? 1.0 / (1.0 + std::exp(-z[j])) : std::exp(z[j]) / (1.0 + std::exp(z[j]));
      w[j] = p * (1.0 - p) * inv_n;
    }
    *hess = X.transpose() * w.asDiagonal() * X;
    hess->diagonal().array() += l2;
  }
}

Result<Eigen::VectorXd> ExactSolution(const FedDataset& data, double l2) {
  if (data.loss == FedLoss::kLeastSquares) {
    if (data.dim > kDenseLeastSquaresMaxDim) return LeastSquaresSolutionCg(data, l2);
    auto s = LeastSquaresSystem(data, l2);
    if (!s.ok()) return s.status();
    return s->theta_star;
  }
  const int d = data.model_dim();
  const double inv_n = 1.0 / data.agents();
  const auto local = data.loss == FedLoss::kSoftmax ? SoftmaxLocal : LogisticLocal;
  auto eval = [&](const Eigen::VectorXd& x, double* v, Eigen::VectorXd* g, Eigen::MatrixXd* h) {
    double vs = 0;
    Eigen::VectorXd gs = Eigen::VectorXd::Zero(d);
    Eigen::MatrixXd hs = Eigen::MatrixXd::Zero(d, d);
    for (int c = 0; c < data.agents(); ++c) {
      double vc;
      Eigen::VectorXd gc;
      Eigen::MatrixXd hc;
      local(data, c, l2, x, v ? &vc : nullptr, g ? &gc : nullptr, h ? &hc : nullptr);
      if (v) vs += vc * inv_n;
      if (g) gs += gc * inv_n;
      if (h) hs += hc * inv_n;
    }
    if (v) *v = vs;
    if (g) *g = gs;
    if (h) *h = hs;
  };
  Eigen::VectorXd x = Eigen::VectorXd::Zero(d);
  for (int it = 0; it < 100; ++it) {
    double f;
    Eigen::VectorXd g;
    Eigen::MatrixXd h;
    eval(x, &f, &g, &h);
    if (g.norm() <= 1e-14 * (1.0 + x.norm())) return x;
    Eigen::LDLT<Eigen::MatrixXd> ldlt(h);
    if (ldlt.info() != Eigen::Success)
      return Status(StatusCode::kFailedPrecondition, std::string("x_star: the Hessian is singular (set l2 > 0)"));
    const Eigen::VectorXd step = ldlt.solve(g);
    double t = 1.0;
    // Backtracking (Armijo) far from x_star only: near it the decrease of f is
    // below its rounding error, and full Newton steps converge quadratically.
    if (g.dot(step) > 1e-10) {
      for (int ls = 0; ls < 60; ++ls) {
        double ft;
        eval(x - t * step, &ft, nullptr, nullptr);
        if (ft <= f - 1e-4 * t * g.dot(step)) break;
        t *= 0.5;
      }
    }
    x -= t * step;
    if (t == 1.0 && step.norm() <= 1e-15 * (1.0 + x.norm())) return x;  // machine precision
  }
  {
    Eigen::VectorXd g;
    eval(x, nullptr, &g, nullptr);
    if (g.norm() <= 1e-12 * (1.0 + x.norm())) return x;
  }
  return Status(StatusCode::kFailedPrecondition,
                std::string("x_star: Newton did not reach machine precision (data separable? increase l2)"));
}

}  // namespace fedrt::problems
