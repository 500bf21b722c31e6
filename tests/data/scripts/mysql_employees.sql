-- MySQL dump 10.13  Distrib 8.0
/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;
/*!40101 SET NAMES utf8mb4 */;
DROP TABLE IF EXISTS `departments`;
CREATE TABLE `departments` (
  `dept_no` char(4) NOT NULL,
  `dept_name` varchar(40) NOT NULL COMMENT 'the department''s name',
  PRIMARY KEY (`dept_no`),
  UNIQUE KEY `dept_name` (`dept_name`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE TABLE `employees` (
  `emp_no` int unsigned NOT NULL AUTO_INCREMENT,
  `birth_date` date NOT NULL,
  `first_name` varchar(14) NOT NULL,
  `gender` enum('M','F') NOT NULL,
  `hire_date` date NOT NULL,
  `updated` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (`emp_no`),
  KEY `idx_hire` (`hire_date`)
) ENGINE=InnoDB AUTO_INCREMENT=10 DEFAULT CHARSET=utf8mb4;
CREATE TABLE `dept_emp` (
  `emp_no` int unsigned NOT NULL,
  `dept_no` char(4) NOT NULL,
  `from_date` date NOT NULL,
  `to_date` date NOT NULL,
  PRIMARY KEY (`emp_no`,`dept_no`),
  KEY `dept_no` (`dept_no`),
  CONSTRAINT `dept_emp_ibfk_1` FOREIGN KEY (`emp_no`) REFERENCES `employees` (`emp_no`) ON DELETE CASCADE,
  CONSTRAINT `dept_emp_ibfk_2` FOREIGN KEY (`dept_no`) REFERENCES `departments` (`dept_no`) ON DELETE CASCADE
) ENGINE=InnoDB;
CREATE TABLE `salaries` (
  `emp_no` int unsigned NOT NULL,
  `salary` decimal(10,2) NOT NULL,
  `from_date` date NOT NULL,
  PRIMARY KEY (`emp_no`,`from_date`),
  CONSTRAINT `salaries_ibfk_1` FOREIGN KEY (`emp_no`) REFERENCES `employees` (`emp_no`)
) ENGINE=InnoDB;
INSERT INTO `salaries` VALUES (1,60117.50,'1986-06-26'),(2,-0.5e3,'1987-06-26');
LOCK TABLES `departments` WRITE;
INSERT INTO `departments` VALUES ('d001','Marketing'),('d002','Finance; \'and\' Co'),('d003','R\\D');
UNLOCK TABLES;
INSERT INTO `employees` VALUES (1,'1953-09-02','Georgi','M','1986-06-26','2020-01-01 00:00:00'),(2,'1964-06-02','Bezalel','F','1985-11-21','2020-01-01 00:00:00');
INSERT INTO `dept_emp` VALUES (1,'d001','1986-06-26','9999-01-01'),(2,'d002','1985-11-21','1990-01-01'),(2,'d003','1990-01-01','9999-01-01');
DELIMITER ;;
CREATE PROCEDURE p() BEGIN SELECT 1; SELECT 2; END ;;
DELIMITER ;
