//! Expressions by YT's operator precedence, from `OR` down to atoms: literals, columns,
//! function calls, `CASE`, `TRANSFORM`, `IN`, `BETWEEN` and `LIKE`.

use super::{Parser, MAX_CHAIN, MAX_PARSE_DEPTH};
use crate::ast::*;
use crate::error::{Error, Result, Span};
use crate::lexer::{Keyword, Token};

impl Parser<'_> {
    fn check_chain(&self, links: usize) -> Result<()> {
        if links > MAX_CHAIN {
            return Err(Error::invalid(
                "Maximum expression depth exceeded",
                self.span(),
            ));
        }
        Ok(())
    }

    fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_PARSE_DEPTH {
            return Err(Error::invalid(
                "Maximum expression depth exceeded",
                self.span(),
            ));
        }
        Ok(())
    }

    /// Level 1: OR.
    pub(super) fn expr(&mut self) -> Result<Expr> {
        self.enter()?;
        let r = self.or_expr();
        self.depth -= 1;
        r
    }

    fn or_expr(&mut self) -> Result<Expr> {
        let mut left = self.and_expr()?;
        let mut links = 0;
        while self.eat_kw(Keyword::Or) {
            links += 1;
            self.check_chain(links)?;
            let right = self.and_expr()?;
            left = binary(BinaryOp::Or, left, right);
        }
        Ok(left)
    }

    /// Level 2: AND.
    pub(super) fn and_expr(&mut self) -> Result<Expr> {
        let mut left = self.not_expr()?;
        let mut links = 0;
        while self.eat_kw(Keyword::And) {
            links += 1;
            self.check_chain(links)?;
            let right = self.not_expr()?;
            left = binary(BinaryOp::And, left, right);
        }
        Ok(left)
    }

    /// Level 3: NOT.
    fn not_expr(&mut self) -> Result<Expr> {
        if self.is_kw(Keyword::Not) {
            let start = self.advance().span;
            self.enter()?;
            let operand = self.not_expr();
            self.depth -= 1;
            let operand = operand?;
            let span = start.to(operand.span);
            return Ok(Expr {
                kind: ExprKind::Unary {
                    op: UnaryOp::Not,
                    operand: Box::new(operand),
                },
                span,
            });
        }
        self.is_null_expr()
    }

    /// Level 4: IS [NOT] NULL.
    fn is_null_expr(&mut self) -> Result<Expr> {
        let operand = self.equality()?;
        if self.eat_kw(Keyword::Is) {
            let negated = self.eat_kw(Keyword::Not);
            self.expect_kw(Keyword::Null, "NULL")?;
            let span = operand.span.to(self.prev_span());
            return Ok(Expr {
                kind: ExprKind::IsNull {
                    operand: Box::new(operand),
                    negated,
                },
                span,
            });
        }
        Ok(operand)
    }

    /// Level 5: = != <>.
    fn equality(&mut self) -> Result<Expr> {
        let mut left = self.relational()?;
        loop {
            let op = match self.peek() {
                Token::Punct("=") => BinaryOp::Eq,
                Token::Punct("!=") | Token::Punct("<>") => BinaryOp::NotEq,
                _ => return Ok(left),
            };
            self.advance();
            let right = self.relational()?;
            left = binary(op, left, right);
        }
    }

    /// Level 6: < <= > >=, IN, BETWEEN, LIKE.
    ///
    /// As in YT's grammar, the text, pattern and escape of `[NOT] LIKE|ILIKE|RLIKE|REGEXP`
    /// are additive expressions, so the string match starts a relational chain (it is not
    /// the operand of another LIKE, IN or BETWEEN) and only `< <= > >=` may follow it.
    fn relational(&mut self) -> Result<Expr> {
        let mut left = self.bit_or()?;
        // Whether `left` may still be the text of a string match, and whether it is one.
        let mut like_text = !is_bare_bit_op(&left);
        let mut matched = false;
        loop {
            let string_match = |t: &Token| {
                matches!(
                    t,
                    Token::Keyword(
                        Keyword::Like | Keyword::Ilike | Keyword::Rlike | Keyword::Regexp,
                    )
                )
            };
            let negated = self.is_kw(Keyword::Not) && string_match(self.peek_at(1));
            if negated || string_match(self.peek()) {
                if !like_text {
                    return self.error(
                        "an operator (the text of LIKE is an additive expression; use parentheses)",
                    );
                }
                if negated {
                    self.advance();
                }
                left = self.like_tail(left, negated)?;
                (like_text, matched) = (false, true);
                continue;
            }
            let op = match self.peek() {
                Token::Punct("<") => BinaryOp::Less,
                Token::Punct("<=") => BinaryOp::LessOrEq,
                Token::Punct(">") => BinaryOp::Greater,
                Token::Punct(">=") => BinaryOp::GreaterOrEq,
                Token::Keyword(Keyword::In | Keyword::Between) if matched => {
                    return self.error("a comparison after LIKE (use parentheses)");
                }
                Token::Keyword(Keyword::In) => {
                    self.advance();
                    left = self.in_tail(left, false)?;
                    like_text = false;
                    continue;
                }
                Token::Keyword(Keyword::Between) => {
                    self.advance();
                    left = self.between_tail(left)?;
                    like_text = false;
                    continue;
                }
                Token::Keyword(Keyword::Not)
                    if matched && self.peek_at(1) == &Token::Keyword(Keyword::In) =>
                {
                    return self.error("a comparison after LIKE (use parentheses)");
                }
                Token::Keyword(Keyword::Not) if self.peek_at(1) == &Token::Keyword(Keyword::In) => {
                    self.advance();
                    self.advance();
                    left = self.in_tail(left, true)?;
                    like_text = false;
                    continue;
                }
                _ => return Ok(left),
            };
            self.advance();
            let right = self.bit_or()?;
            left = binary(op, left, right);
            like_text = false;
        }
    }

    fn in_tail(&mut self, operand: Expr, negated: bool) -> Result<Expr> {
        self.expect_punct("(")?;
        let mut items = Vec::new();
        if !self.is_punct(")") {
            items.push(self.additive()?);
            while self.eat_punct(",") {
                items.push(self.additive()?);
            }
        }
        self.expect_punct(")")?;
        let span = operand.span.to(self.prev_span());
        Ok(Expr {
            kind: ExprKind::In {
                operand: Box::new(operand),
                items,
                negated,
            },
            span,
        })
    }

    fn between_tail(&mut self, operand: Expr) -> Result<Expr> {
        // `x BETWEEN (lo AND hi, ...)` is the multi-range form; `x BETWEEN (1) AND (5)` is not,
        // so try the multi-range form first and fall back.
        if self.is_punct("(") {
            let save = self.pos;
            if let Ok(ranges) = self.multi_ranges() {
                let span = operand.span.to(self.prev_span());
                return Ok(Expr {
                    kind: ExprKind::Between {
                        operand: Box::new(operand),
                        ranges,
                    },
                    span,
                });
            }
            self.pos = save;
        }
        let lo = self.additive()?;
        self.expect_kw(Keyword::And, "AND in BETWEEN")?;
        let hi = self.additive()?;
        let span = operand.span.to(hi.span);
        Ok(Expr {
            kind: ExprKind::Between {
                operand: Box::new(operand),
                ranges: vec![(lo, hi)],
            },
            span,
        })
    }

    fn multi_ranges(&mut self) -> Result<Vec<(Expr, Expr)>> {
        self.expect_punct("(")?;
        let mut ranges = Vec::new();
        loop {
            let lo = self.additive()?;
            self.expect_kw(Keyword::And, "AND")?;
            let hi = self.additive()?;
            ranges.push((lo, hi));
            if !self.eat_punct(",") {
                break;
            }
        }
        self.expect_punct(")")?;
        Ok(ranges)
    }

    fn like_tail(&mut self, operand: Expr, negated: bool) -> Result<Expr> {
        let kind = match self.advance().token {
            Token::Keyword(Keyword::Like) => LikeKind::Like,
            Token::Keyword(Keyword::Ilike) => LikeKind::Ilike,
            _ => LikeKind::Rlike,
        };
        let pattern = self.additive()?;
        let escape = if self.eat_kw(Keyword::Escape) {
            Some(Box::new(self.additive()?))
        } else {
            None
        };
        let span = operand.span.to(self.prev_span());
        Ok(Expr {
            kind: ExprKind::Like {
                operand: Box::new(operand),
                pattern: Box::new(pattern),
                escape,
                kind,
                negated,
            },
            span,
        })
    }

    fn left_assoc(
        &mut self,
        next: fn(&mut Self) -> Result<Expr>,
        ops: &[(&str, BinaryOp)],
    ) -> Result<Expr> {
        let mut left = next(self)?;
        let mut links = 0;
        'outer: loop {
            for (sym, op) in ops {
                if self.is_punct(sym) {
                    self.advance();
                    links += 1;
                    self.check_chain(links)?;
                    let right = next(self)?;
                    left = binary(*op, left, right);
                    continue 'outer;
                }
            }
            return Ok(left);
        }
    }

    /// Level 7: |.
    pub(super) fn bit_or(&mut self) -> Result<Expr> {
        self.left_assoc(Self::bit_and, &[("|", BinaryOp::BitOr)])
    }

    /// Level 8: &.
    fn bit_and(&mut self) -> Result<Expr> {
        self.left_assoc(Self::shift, &[("&", BinaryOp::BitAnd)])
    }

    /// Level 9: << >>.
    fn shift(&mut self) -> Result<Expr> {
        self.left_assoc(
            Self::additive,
            &[("<<", BinaryOp::LeftShift), (">>", BinaryOp::RightShift)],
        )
    }

    /// Level 10: + - ||.
    fn additive(&mut self) -> Result<Expr> {
        self.left_assoc(
            Self::multiplicative,
            &[
                ("+", BinaryOp::Plus),
                ("-", BinaryOp::Minus),
                ("||", BinaryOp::Concat),
            ],
        )
    }

    /// Level 11: * / %.
    fn multiplicative(&mut self) -> Result<Expr> {
        self.left_assoc(
            Self::unary,
            &[
                ("*", BinaryOp::Multiply),
                ("/", BinaryOp::Divide),
                ("%", BinaryOp::Modulo),
            ],
        )
    }

    /// Level 12: unary + - ~.
    fn unary(&mut self) -> Result<Expr> {
        let op = match self.peek() {
            Token::Punct("+") => UnaryOp::Plus,
            Token::Punct("-") => UnaryOp::Minus,
            Token::Punct("~") => UnaryOp::BitNot,
            _ => return self.atom(),
        };
        let start = self.advance().span;
        self.enter()?;
        let operand = self.unary();
        self.depth -= 1;
        let operand = operand?;
        let span = start.to(operand.span);
        Ok(Expr {
            kind: ExprKind::Unary {
                op,
                operand: Box::new(operand),
            },
            span,
        })
    }

    /// Level 13: literals, columns, calls, parentheses, tuples, CASE, TRANSFORM.
    fn atom(&mut self) -> Result<Expr> {
        let span = self.span();
        let lit = |l: Literal| {
            Ok(Expr {
                kind: ExprKind::Literal(l),
                span,
            })
        };
        match self.peek().clone() {
            Token::Int(v) => {
                self.advance();
                lit(Literal::Int(v as i64))
            }
            Token::Uint(v) => {
                self.advance();
                lit(Literal::Uint(v))
            }
            Token::Double(v) => {
                self.advance();
                lit(Literal::Double(v))
            }
            Token::Str(s) => {
                self.advance();
                lit(Literal::String(s))
            }
            Token::Keyword(Keyword::Null) => {
                self.advance();
                lit(Literal::Null)
            }
            Token::Keyword(Keyword::True) => {
                self.advance();
                lit(Literal::Boolean(true))
            }
            Token::Keyword(Keyword::False) => {
                self.advance();
                lit(Literal::Boolean(false))
            }
            Token::Keyword(Keyword::Inf) => {
                self.advance();
                lit(Literal::Double(f64::INFINITY))
            }
            Token::Keyword(Keyword::Case) => self.case_expr(),
            Token::Keyword(Keyword::Transform) => self.transform_expr(),
            Token::Punct("(") => {
                self.advance();
                let mut items = vec![self.aliased()?];
                while self.eat_punct(",") {
                    items.push(self.aliased()?);
                }
                self.expect_punct(")")?;
                let span = span.to(self.prev_span());
                if items.len() == 1 {
                    let mut e = items.pop().unwrap_or_else(|| unreachable_expr(span));
                    e.span = span;
                    Ok(e)
                } else {
                    Ok(Expr {
                        kind: ExprKind::Tuple(items),
                        span,
                    })
                }
            }
            Token::Ident(name) => {
                self.advance();
                if self.is_punct("(") {
                    self.advance();
                    if self.is_punct("*") && name.eq_ignore_ascii_case("count") {
                        // SQL's habit: the error YT gives, and how YT QL counts.
                        return self
                            .error::<Expr>("an expression")
                            .map_err(|e| e.with_hint(super::COUNT_HINT));
                    }
                    let mut args = Vec::new();
                    if !self.is_punct(")") {
                        args.push(self.aliased()?);
                        while self.eat_punct(",") {
                            args.push(self.aliased()?);
                        }
                    }
                    self.expect_punct(")")?;
                    return Ok(Expr {
                        kind: ExprKind::Call { name, args },
                        span: span.to(self.prev_span()),
                    });
                }
                self.column_tail(name, span)
            }
            Token::QuotedIdent(name) => {
                self.advance();
                self.column_tail(name, span)
            }
            Token::Placeholder(name) => Err(Error::syntax(
                format!("placeholder {{{name}}} has no value"),
                span,
            )),
            _ => self.error("an expression"),
        }
    }

    fn column_tail(&mut self, first: String, span: Span) -> Result<Expr> {
        if self.is_punct(".") && matches!(self.peek_at(1), Token::Ident(_) | Token::QuotedIdent(_))
        {
            self.advance();
            let (name, s2) = self.identifier("a column name")?;
            return Ok(Expr {
                kind: ExprKind::Column {
                    table: Some(first),
                    name,
                },
                span: span.to(s2),
            });
        }
        Ok(Expr {
            kind: ExprKind::Column {
                table: None,
                name: first,
            },
            span,
        })
    }

    /// An expression optionally followed by `AS name` (inside parentheses and arguments).
    fn aliased(&mut self) -> Result<Expr> {
        let e = self.expr()?;
        if self.eat_kw(Keyword::As) {
            let (name, s) = self.identifier("an alias name")?;
            let span = e.span.to(s);
            return Ok(Expr {
                kind: ExprKind::Alias {
                    expr: Box::new(e),
                    name,
                },
                span,
            });
        }
        Ok(e)
    }

    fn case_expr(&mut self) -> Result<Expr> {
        let start = self.advance().span;
        let operand = if self.is_kw(Keyword::When) {
            None
        } else {
            Some(Box::new(self.expr()?))
        };
        let mut whens = Vec::new();
        while self.eat_kw(Keyword::When) {
            let w = self.expr()?;
            self.expect_kw(Keyword::Then, "THEN")?;
            let t = self.expr()?;
            whens.push((w, t));
        }
        if whens.is_empty() {
            return self.error("WHEN");
        }
        let otherwise = if self.eat_kw(Keyword::Else) {
            Some(Box::new(self.expr()?))
        } else {
            None
        };
        self.expect_kw(Keyword::End, "END")?;
        Ok(Expr {
            kind: ExprKind::Case {
                operand,
                whens,
                otherwise,
            },
            span: start.to(self.prev_span()),
        })
    }

    fn transform_expr(&mut self) -> Result<Expr> {
        let start = self.advance().span;
        self.expect_punct("(")?;
        let operand = self.expr()?;
        self.expect_punct(",")?;
        let from = self.literal_list()?;
        self.expect_punct(",")?;
        let to = self.literal_list()?;
        let default = if self.eat_punct(",") {
            Some(Box::new(self.expr()?))
        } else {
            None
        };
        self.expect_punct(")")?;
        Ok(Expr {
            kind: ExprKind::Transform {
                operand: Box::new(operand),
                from,
                to,
                default,
            },
            span: start.to(self.prev_span()),
        })
    }

    fn literal_list(&mut self) -> Result<Vec<Expr>> {
        self.expect_punct("(")?;
        let mut items = vec![self.additive()?];
        while self.eat_punct(",") {
            items.push(self.additive()?);
        }
        self.expect_punct(")")?;
        Ok(items)
    }
}

fn unreachable_expr(span: Span) -> Expr {
    Expr {
        kind: ExprKind::Literal(Literal::Null),
        span,
    }
}

/// `a | b`, `a & b`, `a << b` or `a >> b` not in parentheses (a parenthesised expression's
/// span starts at its parenthesis, before its left operand).
fn is_bare_bit_op(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Binary { op, left, .. } => {
            matches!(
                op,
                BinaryOp::BitOr | BinaryOp::BitAnd | BinaryOp::LeftShift | BinaryOp::RightShift
            ) && left.span.start == e.span.start
        }
        _ => false,
    }
}

fn binary(op: BinaryOp, left: Expr, right: Expr) -> Expr {
    let span = left.span.to(right.span);
    Expr {
        kind: ExprKind::Binary {
            op,
            left: Box::new(left),
            right: Box::new(right),
        },
        span,
    }
}
